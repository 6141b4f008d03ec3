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
//!
//! The same walk finds what ties code to one OS ([`os_specific_uses`]), so
//! a crate can keep it in the modules meant for it: paths into `libc`,
//! `windows_sys`, `interprocess` or `std::os::{unix, windows, ..}`, and the
//! `cfg`s that pick an OS.

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
    // The module's floor is checked before its file is read, so a module
    // missing from the table is reported as that, whatever its file holds.
    let own_floor = |module: &str| {
        floor(module).ok_or_else(|| LayerError::ModuleWithoutFloor {
            module: module.to_owned(),
        })
    };
    let mut upward = BTreeSet::new();
    let top_level = walk(
        src,
        &[],
        |module| own_floor(module).map(drop),
        |module, rel, read| {
            let Some(module) = module else {
                return Ok(());
            };
            let own = own_floor(module)?;
            for used in &read.uses {
                if used == module || used == "self" {
                    continue;
                }
                let theirs = floor(used).ok_or_else(|| LayerError::UseWithoutFloor {
                    file: rel.to_owned(),
                    used: used.clone(),
                })?;
                if theirs >= own {
                    upward.insert((rel.to_owned(), used.clone()));
                }
            }
            Ok(())
        },
    )?;
    if let Some((m, _)) = floors.iter().find(|(m, _)| !top_level.contains(*m)) {
        return Err(LayerError::NotAModule { module: m.to_string() });
    }
    Ok(upward)
}

/// The crates whose every path ties code to one OS.
const OS_CRATES: &[&str] = &["libc", "windows_sys", "interprocess"];

/// The modules of `std::os` (and `core::os`) that exist on one OS or family.
const OS_MODULES: &[&str] = &["unix", "windows", "fd", "linux", "macos"];

/// The `cfg` options that pick an OS.
const OS_CFGS: &[&str] = &[
    "unix",
    "windows",
    "target_os",
    "target_family",
    "target_env",
    "target_vendor",
];

/// Paths that tie code to one OS, outside test items: (file relative to
/// `src`, what was named). What is named is a crate (`libc`, `windows_sys`,
/// `interprocess`), a module of `std::os` or `core::os` (`std::os::unix`),
/// or a `cfg` predicate that names an OS option, as `cfg(P)` whether it
/// stood in `#[cfg(P)]`, `#[cfg_attr(P, ..)]` or `cfg!(P)`.
///
/// The files of the top-level modules in `allowed` are not read: they are
/// where such code belongs. Their declarations in `lib.rs` are, so a
/// `#[cfg(windows)] mod win;` there is reported for `lib.rs`. A name in
/// `allowed` that is not a top-level module is an error, so the list stays
/// true to the crate.
pub fn os_specific_uses(src: &Path, allowed: &[&str]) -> Result<BTreeSet<(String, String)>, LayerError> {
    let mut found = BTreeSet::new();
    let top_level = walk(
        src,
        allowed,
        |_| Ok(()),
        |_, rel, read| {
            found.extend(read.os.iter().map(|what| (rel.to_owned(), what.clone())));
            Ok(())
        },
    )?;
    if let Some(m) = allowed.iter().find(|m| !top_level.contains(**m)) {
        return Err(LayerError::NotAModule { module: m.to_string() });
    }
    Ok(found)
}

/// Reads the crate's module tree from `lib.rs` (or `main.rs`) down, handing `each` every
/// file: the top-level module it belongs to (`None` for `lib.rs`), its path
/// relative to `src`, and what it holds. `enter` sees the top-level module
/// before its file is read. The files of the top-level modules in `skip`
/// are not read. Returns the crate's top-level modules.
fn walk(
    src: &Path,
    skip: &[&str],
    mut enter: impl FnMut(&str) -> Result<(), LayerError>,
    mut each: impl FnMut(Option<&str>, &str, &Module) -> Result<(), LayerError>,
) -> Result<BTreeSet<String>, LayerError> {
    // A library's root, or a binary's when there is no library.
    let lib = match src.join("lib.rs") {
        lib if lib.exists() => lib,
        _ => src.join("main.rs"),
    };
    let root = read_module(src, &lib, src.to_path_buf(), 0)?;
    each(None, &relative(src, &lib), &root)?;
    let mut top_level = BTreeSet::new();
    let mut pending = Vec::new();
    for child in root.children {
        top_level.insert(child.name.clone());
        if !skip.contains(&child.name.as_str()) {
            pending.push((child.name.clone(), child));
        }
    }
    while let Some((module, child)) = pending.pop() {
        enter(&module)?;
        let file = child.file(src)?;
        let read = read_module(src, &file, child.parent_dir.join(&child.name), child.depth)?;
        each(Some(&module), &relative(src, &file), &read)?;
        pending.extend(read.children.into_iter().map(|c| (module.clone(), c)));
    }
    Ok(top_level)
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

/// What one file gives: the crate's top-level modules it uses, what in it
/// ties it to one OS, and the module files it declares (not those
/// `#[cfg(test)]` marks).
struct Module {
    uses: BTreeSet<String>,
    os: BTreeSet<String>,
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
    let mut reader = Reader::new(file.to_path_buf(), dir, depth);
    reader.visit_file(&parsed);
    Ok(Module {
        uses: reader.uses,
        os: reader.os,
        children: reader.children,
    })
}

/// The crate's top-level modules `text`, a module at `depth` below the crate
/// (1 for `src/x.rs`), uses outside its test items.
#[cfg(test)]
fn uses(text: &str, depth: usize) -> BTreeSet<String> {
    let parsed = syn::parse_file(text).expect("a Rust file");
    let mut reader = Reader::new(PathBuf::new(), PathBuf::new(), depth);
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
    os: BTreeSet<String>,
    children: Vec<Child>,
}

impl Reader {
    fn new(file: PathBuf, dir: PathBuf, depth: usize) -> Reader {
        Reader {
            file,
            dir,
            depth,
            uses: BTreeSet::new(),
            os: BTreeSet::new(),
            children: Vec::new(),
        }
    }

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
        if let Some(what) = os_path(segments) {
            self.os.insert(what);
        }
    }

    /// A `cfg` or `cfg_attr` attribute, or `cfg!` (as `cfg`), with the
    /// tokens in its parentheses. The attributes a `cfg_attr` applies are
    /// read too: they may be `cfg`s themselves.
    fn cfg(&mut self, name: &str, args: proc_macro2::TokenStream) {
        match name {
            "cfg" if names_os(args.clone()) => {
                self.os.insert(format!("cfg({})", spell(args)));
            }
            "cfg_attr" => {
                let mut parts = split_commas(args).into_iter();
                if let Some(predicate) = parts.next() {
                    self.cfg("cfg", predicate.into_iter().collect());
                }
                for attr in parts {
                    self.attribute_tokens(&attr);
                }
            }
            _ => {}
        }
    }

    /// An attribute as tokens (what stands in `#[...]`): `cfg(..)` or
    /// `cfg_attr(..)` counts.
    fn attribute_tokens(&mut self, attr: &[proc_macro2::TokenTree]) {
        use proc_macro2::{Delimiter, TokenTree};
        if let [TokenTree::Ident(name), TokenTree::Group(args)] = attr
            && args.delimiter() == Delimiter::Parenthesis
        {
            self.cfg(&name.to_string(), args.stream());
        }
    }

    /// Paths in a macro call's tokens (`crate :: x`, `libc :: kill`, a
    /// leading `::` left out), `cfg!(..)`, and `#[cfg(..)]` attributes.
    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        use proc_macro2::{Delimiter, TokenTree};
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => {
                    let after_hash = match &trees[..i] {
                        [.., TokenTree::Punct(p)] if p.as_char() == '#' => true,
                        [.., TokenTree::Punct(h), TokenTree::Punct(b)] => h.as_char() == '#' && b.as_char() == '!',
                        _ => false,
                    };
                    if after_hash && g.delimiter() == Delimiter::Bracket {
                        let attr: Vec<TokenTree> = g.stream().into_iter().collect();
                        self.attribute_tokens(&attr);
                    }
                    self.tokens(g.stream());
                    i += 1;
                }
                TokenTree::Ident(_) if continues(&trees[..i]) => i += 1,
                TokenTree::Ident(first) => {
                    if first == "cfg"
                        && let [TokenTree::Punct(bang), TokenTree::Group(args), ..] = &trees[i + 1..]
                        && bang.as_char() == '!'
                    {
                        self.cfg("cfg", args.stream());
                    }
                    // A path's later segments are not read as paths of their
                    // own: `foo::libc::x` does not name libc.
                    let mut segments = vec![first.to_string()];
                    i += 1;
                    while let [TokenTree::Punct(a), TokenTree::Punct(b), TokenTree::Ident(name), ..] = &trees[i..]
                        && a.as_char() == ':'
                        && b.as_char() == ':'
                    {
                        segments.push(name.to_string());
                        i += 3;
                    }
                    self.note(&segments);
                }
                _ => i += 1,
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

/// Whether an identifier after `before` (a macro's tokens) is not the start
/// of a path: a field or method (`x.libc`), or a segment after a path's
/// generics (`Vec::<u8>::new`). A leading `::` (`::std::os`) does start one.
fn continues(before: &[proc_macro2::TokenTree]) -> bool {
    use proc_macro2::TokenTree;
    match before {
        [.., TokenTree::Punct(dot)] if dot.as_char() == '.' => true,
        [.., last, TokenTree::Punct(a), TokenTree::Punct(b)] if a.as_char() == ':' && b.as_char() == ':' => {
            matches!(last, TokenTree::Ident(_)) || matches!(last, TokenTree::Punct(p) if p.as_char() == '>')
        }
        _ => false,
    }
}

/// What a path that ties code to one OS names: its crate (`libc`), or the
/// module of `std::os` or `core::os` (`std::os::unix`).
fn os_path(segments: &[String]) -> Option<String> {
    match segments {
        [first, ..] if OS_CRATES.contains(&first.as_str()) => Some(first.clone()),
        [root, os, family, ..]
            if (root == "std" || root == "core") && os == "os" && OS_MODULES.contains(&family.as_str()) =>
        {
            Some(format!("{root}::os::{family}"))
        }
        _ => None,
    }
}

/// Whether a `cfg` predicate names an OS option anywhere, inside `any`,
/// `all` and `not` too. Values are literals, so `feature = "unix"` does not.
fn names_os(predicate: proc_macro2::TokenStream) -> bool {
    use proc_macro2::TokenTree;
    predicate.into_iter().any(|t| match t {
        TokenTree::Ident(i) => OS_CFGS.iter().any(|o| i == *o),
        TokenTree::Group(g) => names_os(g.stream()),
        _ => false,
    })
}

/// A `cfg` predicate as it is written (`not(any(unix, target_os = "linux"))`),
/// whatever the spacing in the source.
fn spell(predicate: proc_macro2::TokenStream) -> String {
    use proc_macro2::TokenTree;
    let mut out = String::new();
    for t in predicate {
        match t {
            TokenTree::Group(g) => {
                out.push('(');
                out.push_str(&spell(g.stream()));
                out.push(')');
            }
            TokenTree::Punct(p) if p.as_char() == ',' => out.push_str(", "),
            TokenTree::Punct(p) if p.as_char() == '=' => out.push_str(" = "),
            TokenTree::Punct(p) => out.push(p.as_char()),
            TokenTree::Ident(i) => out.push_str(&i.to_string()),
            TokenTree::Literal(l) => out.push_str(&l.to_string()),
        }
    }
    // A trailing comma (`any(unix,)`) says nothing.
    out.trim_end_matches(", ").to_owned()
}

/// Tokens split at their top-level commas, empty parts left out.
fn split_commas(tokens: proc_macro2::TokenStream) -> Vec<Vec<proc_macro2::TokenTree>> {
    use proc_macro2::TokenTree;
    let mut parts = vec![Vec::new()];
    for t in tokens {
        match t {
            TokenTree::Punct(p) if p.as_char() == ',' => parts.push(Vec::new()),
            t => parts.last_mut().expect("never empty").push(t),
        }
    }
    parts.retain(|p| !p.is_empty());
    parts
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
        m.attrs.iter().for_each(|a| self.visit_attribute(a));
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
        u.attrs.iter().for_each(|a| self.visit_attribute(a));
        self.use_tree(&u.tree, &mut Vec::new());
    }

    fn visit_item_extern_crate(&mut self, c: &'ast syn::ItemExternCrate) {
        self.note(&[c.ident.to_string()]);
        syn::visit::visit_item_extern_crate(self, c);
    }

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        if let syn::Meta::List(list) = &attr.meta
            && let Some(name) = list.path.get_ident()
        {
            self.cfg(&name.to_string(), list.tokens.clone());
        }
        syn::visit::visit_attribute(self, attr);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.note(&segments);
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if m.path.is_ident("cfg") {
            self.cfg("cfg", m.tokens.clone());
        }
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

#[cfg(test)]
mod tests;
