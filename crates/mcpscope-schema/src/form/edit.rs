//! The editing operations the view calls: JSON mode and back, array rows,
//! map entries, a chooser's variant.

use super::{Entry, Field, FieldKind, FormModeError, pretty};
use serde_json::Value;

impl Field {
    /// Re-checks a JSON editor's text after an edit.
    pub fn json_edited(&mut self) {
        if let FieldKind::Json { text, error } = &mut self.kind {
            *error = if text.trim().is_empty() {
                None
            } else {
                serde_json::from_str::<Value>(text).err().map(|e| e.to_string())
            };
        }
        self.touch();
    }

    /// Switches to a JSON editor holding the current value.
    pub fn to_json_mode(&mut self) {
        let v = self.current_value();
        self.kind = FieldKind::Json {
            text: pretty(&v),
            error: None,
        };
        self.pinned_json = true;
    }

    /// Back to the form from JSON mode; fails (and stays JSON) when the text does not
    /// parse or the value does not fit the form.
    pub fn to_form_mode(&mut self) -> Result<(), FormModeError> {
        if !self.form_possible {
            return Err(FormModeError::NoForm(self.note.clone()));
        }
        let FieldKind::Json { text, .. } = &self.kind else {
            return Ok(());
        };
        let v: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(text).map_err(FormModeError::InvalidJson)?
        };
        self.pinned_json = false;
        let saved = self.clone();
        let set = self.set;
        self.load(&v);
        self.set = set;
        if self.kind.is_json() {
            *self = saved;
            self.pinned_json = true;
            return Err(FormModeError::DoesNotFit);
        }
        Ok(())
    }

    /// Whether the person pinned this field to JSON mode.
    pub fn is_json_pinned(&self) -> bool {
        self.pinned_json
    }

    /// Adds an array row (built from the item schema, its default if any).
    pub fn add_item(&mut self) {
        if let FieldKind::Array { items, item, .. } = &mut self.kind {
            let f = Field::build(item, &items.len().to_string(), true, true);
            items.push(f);
        }
        self.touch();
    }

    pub fn remove_item(&mut self, i: usize) {
        if let FieldKind::Array { items, .. } = &mut self.kind
            && i < items.len()
        {
            items.remove(i);
            renumber(items);
        }
        self.touch();
    }

    /// Moves array row `from` to `to`.
    pub fn move_item(&mut self, from: usize, to: usize) {
        if let FieldKind::Array { items, .. } = &mut self.kind
            && from < items.len()
            && to < items.len()
        {
            let f = items.remove(from);
            items.insert(to, f);
            renumber(items);
        }
        self.touch();
    }

    /// Adds a key/value row to a map, or an extra key to an object that allows them.
    /// Returns false when the object allows no extra keys.
    pub fn add_entry(&mut self, key: &str) -> bool {
        let (entries, tpl) = match &mut self.kind {
            FieldKind::Map { entries, value } => (entries, value.clone()),
            FieldKind::Object {
                extra,
                additional: Some(t),
                ..
            } => (extra, t.clone()),
            _ => return false,
        };
        let field = Field::build(&tpl, key, true, true);
        entries.push(Entry {
            key: key.to_owned(),
            field,
        });
        self.touch();
        true
    }

    pub fn remove_entry(&mut self, i: usize) {
        if let FieldKind::Map { entries, .. } | FieldKind::Object { extra: entries, .. } = &mut self.kind
            && i < entries.len()
        {
            entries.remove(i);
        }
        self.touch();
    }

    /// Picks variant `i` of a chooser. The new variant starts from its own fields: an
    /// object keeps the old values of the properties it declares and nothing else (the
    /// old variant's keys would make the value match the old variant too); any other
    /// variant keeps the old value when it fits as it is.
    pub fn choose(&mut self, i: usize) {
        let name = self.name.clone();
        if let FieldKind::Choice {
            variants,
            selected,
            current,
            ..
        } = &mut self.kind
            && i < variants.len()
            && i != *selected
        {
            let old = current.current_value();
            let mut fresh = Field::build(&variants[i], &name, true, true);
            let fits = |f: &Field, v: &Value| f.fits_cleanly() && f.current_value() == *v;
            match (&mut fresh.kind, &old) {
                (_, Value::Null) => {}
                (FieldKind::Object { fields, .. }, Value::Object(m)) => {
                    for f in fields.iter_mut() {
                        if let Some(x) = m.get(&f.name) {
                            let mut probe = f.clone();
                            probe.load(x);
                            if fits(&probe, x) {
                                *f = probe;
                            }
                        }
                    }
                }
                (FieldKind::Object { .. }, _) => {}
                _ => {
                    let mut probe = fresh.clone();
                    probe.load(&old);
                    if fits(&probe, &old) {
                        fresh = probe;
                    }
                }
            }
            *selected = i;
            **current = fresh;
        }
        self.touch();
    }
}

fn renumber(items: &mut [Field]) {
    for (i, f) in items.iter_mut().enumerate() {
        f.name = i.to_string();
    }
}
