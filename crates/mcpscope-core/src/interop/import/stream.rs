//! Reading a large JSON document as it comes: the elements of an array
//! handed out one at a time, and how a visitor that stopped says why.

use super::{Format, ImportError};
use crate::wire::scalars_are;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// What reading JSON came to: the error a visitor kept when it stopped
/// (`stopped`), else serde's.
pub(super) fn settle<T>(
    format: Format,
    read: Result<T, serde_json::Error>,
    stopped: Option<ImportError>,
) -> Result<T, ImportError> {
    match (read, stopped) {
        (_, Some(e)) => Err(e),
        (Ok(v), None) => Ok(v),
        (Err(e), None) if e.is_io() => Err(ImportError::Read(e.into())),
        (Err(e), None) => Err(ImportError::NotJson { format, error: e }),
    }
}

/// The elements of a JSON array, each handed to `each` as it is read (with
/// its index); `false` when the value is not an array (read and skipped).
pub(super) struct EachElement<'s, F> {
    pub(super) each: F,
    pub(super) stopped: &'s mut Option<ImportError>,
}

/// What a visitor returns to stop serde after `each` failed (the kept error is said).
pub(super) fn stop<E: serde::de::Error>(stopped: &mut Option<ImportError>, e: ImportError) -> E {
    *stopped = Some(e);
    E::custom("stopped")
}

impl<'de, F: FnMut(usize, Value) -> Result<(), ImportError>> Visitor<'de> for EachElement<'_, F> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<bool, A::Error> {
        let mut i = 0;
        while let Some(v) = seq.next_element::<Value>()? {
            if let Err(e) = (self.each)(i, v) {
                return Err(stop(self.stopped, e));
            }
            i += 1;
        }
        Ok(true)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    scalars_are!(false);
}

impl<'de, F: FnMut(usize, Value) -> Result<(), ImportError>> DeserializeSeed<'de> for EachElement<'_, F> {
    type Value = bool;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}
