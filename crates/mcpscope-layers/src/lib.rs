//! The layer rule of mcpscope's crates, kept in one place: a crate's
//! top-level modules stand in floors, and a module may use the floors below
//! its own, never one above, nor a sibling on its own floor. Each crate keeps
//! its floors in its `layers.rs` and calls [`upward_uses`] from a test.
//!
//! The sources are read as Rust (with `syn`), following the module tree from
//! `lib.rs`: every path that starts at the crate counts (`crate::x`,
//! `use crate::{x, y}`, and `super::x` where `super` is the crate), in code
//! and in macro calls. Comments and strings do not, nor do the items
//! `#[cfg(test)]` marks, wherever in a file they stand; the files of a module
//! it marks (`#[cfg(test)] mod tests;`) are not read at all.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// Why the rule could not be checked: the sources, or the floors given for
/// them, are not what the checker needs.
#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{file} is not Rust that syn can read: {source}")]
    Parse { file: String, source: syn::Error },
    #[error("{file} declares `mod {module};`, but neither {module}.rs nor {module}/mod.rs is there")]
    MissingFile { file: String, module: String },
    #[error("crate::{module} has no floor in layers.rs: give it one")]
    ModuleWithoutFloor { module: String },
    #[error("{file} uses crate::{used}, which has no floor in layers.rs: give it one")]
    UseWithoutFloor { file: String, used: String },
    #[error("layers.rs names {module}, which is not a module of the crate")]
    NotAModule { module: String },
}

/// The upward or sideways uses in the crate whose sources are in `src`, as
/// (file relative to `src`, top-level module used). `floors` gives each
/// top-level module its floor; `bottom` names what the crate may use from
/// any floor (floor 0: e.g. the core's re-exports of the crates below it).
///
/// A top-level module without a floor, a use of one, or a floor for a module
/// the crate does not declare is an error, so the table stays whole.
pub fn upward_uses(
    src: &Path,
    floors: &[(&str, u8)],
    bottom: &[&str],
) -> Result<BTreeSet<(String, String)>, LayerError> {
    let floor = |module: &str| {
        if bottom.contains(&module) {
            return Some(0);
        }
        floors.iter().find(|(m, _)| *m == module).map(|(_, f)| *f)
    };
    let root = read_module(src, &src.join("lib.rs"), src.to_path_buf(), 0)?;
    let mut top_level = BTreeSet::new();
    let mut pending = Vec::new();
    for child in root.children {
        top_level.insert(child.name.clone());
        pending.push((child.name.clone(), child));
    }
    let mut upward = BTreeSet::new();
    while let Some((module, child)) = pending.pop() {
        let own = floor(&module).ok_or_else(|| LayerError::ModuleWithoutFloor { module: module.clone() })?;
        let file = child.file(src)?;
        let read = read_module(src, &file, child.parent_dir.join(&child.name), child.depth)?;
        let rel = relative(src, &file);
        for used in read.uses {
            if used == module || used == "self" {
                continue;
            }
            let theirs = floor(&used).ok_or_else(|| LayerError::UseWithoutFloor {
                file: rel.clone(),
                used: used.clone(),
            })?;
            if theirs >= own {
                upward.insert((rel.clone(), used));
            }
        }
        pending.extend(read.children.into_iter().map(|c| (module.clone(), c)));
    }
    if let Some((m, _)) = floors.iter().find(|(m, _)| !top_level.contains(*m)) {
        return Err(LayerError::NotAModule { module: m.to_string() });
    }
    Ok(upward)
}

fn relative(src: &Path, file: &Path) -> String {
    file.strip_prefix(src)
        .unwrap_or(file)
        .to_string_lossy()
        .replace('\\', "/")
}

/// A `mod name;` declaration: its file is `name.rs` or `name/mod.rs` in
/// `parent_dir`, at `depth` below the crate.
struct Child {
    name: String,
    parent_dir: PathBuf,
    depth: usize,
    declared_in: PathBuf,
}

impl Child {
    fn file(&self, src: &Path) -> Result<PathBuf, LayerError> {
        let flat = self.parent_dir.join(format!("{}.rs", self.name));
        let nested = self.parent_dir.join(&self.name).join("mod.rs");
        [flat, nested]
            .into_iter()
            .find(|f| f.is_file())
            .ok_or_else(|| LayerError::MissingFile {
                file: relative(src, &self.declared_in),
                module: self.name.clone(),
            })
    }
}

/// What one file gives: the crate's top-level modules it uses, and the
/// module files it declares (not those `#[cfg(test)]` marks).
struct Module {
    uses: BTreeSet<String>,
    children: Vec<Child>,
}

/// Reads `file`, a module at `depth` below the crate whose `mod x;` files
/// live in `dir`.
fn read_module(src: &Path, file: &Path, dir: PathBuf, depth: usize) -> Result<Module, LayerError> {
    let text = std::fs::read_to_string(file).map_err(|source| LayerError::Read {
        path: file.to_path_buf(),
        source,
    })?;
    let parsed = syn::parse_file(&text).map_err(|source| LayerError::Parse {
        file: relative(src, file),
        source,
    })?;
    let mut reader = Reader {
        file: file.to_path_buf(),
        dir,
        depth,
        uses: BTreeSet::new(),
        children: Vec::new(),
    };
    reader.visit_file(&parsed);
    Ok(Module {
        uses: reader.uses,
        children: reader.children,
    })
}

/// The crate's top-level modules `text`, a module at `depth` below the crate
/// (1 for `src/x.rs`), uses outside its test items.
#[cfg(test)]
fn uses(text: &str, depth: usize) -> BTreeSet<String> {
    let parsed = syn::parse_file(text).expect("a Rust file");
    let mut reader = Reader {
        file: PathBuf::new(),
        dir: PathBuf::new(),
        depth,
        uses: BTreeSet::new(),
        children: Vec::new(),
    };
    reader.visit_file(&parsed);
    reader.uses
}

/// Walks one file: `depth` is the current module's depth below the crate
/// (an inline `mod x { }` adds one), `dir` where its `mod y;` files are.
struct Reader {
    file: PathBuf,
    dir: PathBuf,
    depth: usize,
    uses: BTreeSet<String>,
    children: Vec<Child>,
}

impl Reader {
    /// The top-level module a path names, when it starts at the crate:
    /// `crate::x::..`, or as many `super`s as the module is deep.
    fn crate_module(&self, segments: &[String]) -> Option<String> {
        let supers = segments.iter().take_while(|s| *s == "super").count();
        let at = match segments.first()?.as_str() {
            "crate" => 1,
            "super" if supers == self.depth => supers,
            _ => return None,
        };
        segments.get(at).cloned()
    }

    fn note(&mut self, segments: &[String]) {
        if let Some(module) = self.crate_module(segments) {
            self.uses.insert(module);
        }
    }

    /// Paths in a macro call's tokens: `crate :: x`, `super :: x`.
    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        use proc_macro2::TokenTree;
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, t) in trees.iter().enumerate() {
            match t {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(first) if first == "crate" || first == "super" => {
                    let mut segments = vec![first.to_string()];
                    let mut rest = &trees[i + 1..];
                    while let [
                        TokenTree::Punct(a),
                        TokenTree::Punct(b),
                        TokenTree::Ident(name),
                        tail @ ..,
                    ] = rest
                        && a.as_char() == ':'
                        && b.as_char() == ':'
                    {
                        segments.push(name.to_string());
                        rest = tail;
                    }
                    self.note(&segments);
                }
                _ => {}
            }
        }
    }

    /// Every path a `use` tree names, each with the prefix above it.
    fn use_tree(&mut self, tree: &syn::UseTree, prefix: &mut Vec<String>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(&p.tree, prefix);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.note_leaf(prefix, n.ident.to_string()),
            syn::UseTree::Rename(r) => self.note_leaf(prefix, r.ident.to_string()),
            syn::UseTree::Glob(_) => self.note(prefix),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(t, prefix)),
        }
    }

    fn note_leaf(&mut self, prefix: &[String], leaf: String) {
        let mut path = prefix.to_vec();
        path.push(leaf);
        self.note(&path);
    }
}

fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test"))
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

fn impl_item_attrs(item: &syn::ImplItem) -> &[syn::Attribute] {
    match item {
        syn::ImplItem::Const(i) => &i.attrs,
        syn::ImplItem::Fn(i) => &i.attrs,
        syn::ImplItem::Type(i) => &i.attrs,
        syn::ImplItem::Macro(i) => &i.attrs,
        _ => &[],
    }
}

fn trait_item_attrs(item: &syn::TraitItem) -> &[syn::Attribute] {
    match item {
        syn::TraitItem::Const(i) => &i.attrs,
        syn::TraitItem::Fn(i) => &i.attrs,
        syn::TraitItem::Type(i) => &i.attrs,
        syn::TraitItem::Macro(i) => &i.attrs,
        _ => &[],
    }
}

impl<'ast> Visit<'ast> for Reader {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !test_only(item_attrs(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        if !test_only(impl_item_attrs(item)) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast syn::TraitItem) {
        if !test_only(trait_item_attrs(item)) {
            syn::visit::visit_trait_item(self, item);
        }
    }

    fn visit_field(&mut self, field: &'ast syn::Field) {
        if !test_only(&field.attrs) {
            syn::visit::visit_field(self, field);
        }
    }

    fn visit_variant(&mut self, variant: &'ast syn::Variant) {
        if !test_only(&variant.attrs) {
            syn::visit::visit_variant(self, variant);
        }
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        if !test_only(&local.attrs) {
            syn::visit::visit_local(self, local);
        }
    }

    /// A module (not one `#[cfg(test)]` marks: `visit_item` left those out):
    /// a file to read later, or inline items one module deeper.
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let name = m.ident.to_string();
        match &m.content {
            None => self.children.push(Child {
                name,
                parent_dir: self.dir.clone(),
                depth: self.depth + 1,
                declared_in: self.file.clone(),
            }),
            Some((_, items)) => {
                let inner = self.dir.join(name);
                let outer = std::mem::replace(&mut self.dir, inner);
                self.depth += 1;
                items.iter().for_each(|item| self.visit_item(item));
                self.depth -= 1;
                self.dir = outer;
            }
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&u.tree, &mut Vec::new());
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.note(&segments);
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

#[cfg(test)]
mod tests;
