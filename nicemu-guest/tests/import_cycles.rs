// SPDX-License-Identifier: Apache-2.0
//! No two source files of a crate import each other, directly or in a loop.
//!
//! A file imports another when its non-test code names an item (or a module) that the
//! other file holds: through `use`, or through a path in the code (`crate::a::b::f()`,
//! `super::X`, `child::Y`, an alias a `use` made), macro bodies included. A `mod` line is
//! not an import. `#[cfg(test)]` items are left out: tests may reach anywhere.
//!
//! The files of a crate are found from its roots (`main.rs`, `lib.rs`) by their `mod`
//! lines, so the module tree is the compiler's. syn parses the files (a well-kept parser of
//! Rust; a hand-written one would get raw strings, lifetimes and macros wrong).
#![allow(clippy::unwrap_used, reason = "tests: a step that fails panics")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit_mut::VisitMut;

/// One module: a file, or a `mod NAME { … }` inside one.
struct Module {
    file: PathBuf,
    parent: Option<usize>,
    children: BTreeMap<String, usize>,
    /// The module's own non-test code (inline child modules taken out).
    items: Vec<syn::Item>,
    /// Its `use` leaves (function bodies' too): (path, name bound, glob).
    uses: Vec<UseLeaf>,
    /// Names of the items it defines itself.
    defines: BTreeSet<String>,
}

/// One leaf of a `use` tree: the path, the name it binds, whether it is a glob.
type UseLeaf = (Vec<String>, String, bool);

/// The module tree of one crate root.
struct Tree {
    modules: Vec<Module>,
}

/// Where a path leads: the module that defines its item (or the module itself).
#[derive(Clone, Copy)]
struct Resolved {
    module: usize,
    item: bool,
}

/// How many `use` re-exports a path is followed through (a loop of them is a compile error).
const MAX_HOPS: usize = 16;

/// An import of one file by another, with the path that makes it (for the message).
type Edges = BTreeMap<(PathBuf, PathBuf), String>;

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string() == "test")
    })
}

/// Takes `#[cfg(test)]` items out of everything (impl blocks and function bodies too).
struct StripTests;

impl VisitMut for StripTests {
    fn visit_file_mut(&mut self, f: &mut syn::File) {
        f.items.retain(|i| !is_cfg_test(item_attrs(i)));
        syn::visit_mut::visit_file_mut(self, f);
    }
    fn visit_item_mod_mut(&mut self, m: &mut syn::ItemMod) {
        if let Some((_, items)) = &mut m.content {
            items.retain(|i| !is_cfg_test(item_attrs(i)));
        }
        syn::visit_mut::visit_item_mod_mut(self, m);
    }
    fn visit_item_impl_mut(&mut self, i: &mut syn::ItemImpl) {
        i.items.retain(|it| match it {
            syn::ImplItem::Fn(f) => !is_cfg_test(&f.attrs),
            syn::ImplItem::Const(c) => !is_cfg_test(&c.attrs),
            syn::ImplItem::Type(t) => !is_cfg_test(&t.attrs),
            _ => true,
        });
        syn::visit_mut::visit_item_impl_mut(self, i);
    }
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        b.stmts.retain(|s| match s {
            syn::Stmt::Item(i) => !is_cfg_test(item_attrs(i)),
            _ => true,
        });
        syn::visit_mut::visit_block_mut(self, b);
    }
}

/// Takes the `use` items out of function bodies (their paths are read as `use` trees).
struct NestedUses(Vec<syn::ItemUse>);

impl VisitMut for NestedUses {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        b.stmts.retain(|s| match s {
            syn::Stmt::Item(syn::Item::Use(u)) => {
                self.0.push(u.clone());
                false
            }
            _ => true,
        });
        syn::visit_mut::visit_block_mut(self, b);
    }
}

fn item_attrs(i: &syn::Item) -> &[syn::Attribute] {
    match i {
        syn::Item::Const(x) => &x.attrs,
        syn::Item::Enum(x) => &x.attrs,
        syn::Item::ExternCrate(x) => &x.attrs,
        syn::Item::Fn(x) => &x.attrs,
        syn::Item::ForeignMod(x) => &x.attrs,
        syn::Item::Impl(x) => &x.attrs,
        syn::Item::Macro(x) => &x.attrs,
        syn::Item::Mod(x) => &x.attrs,
        syn::Item::Static(x) => &x.attrs,
        syn::Item::Struct(x) => &x.attrs,
        syn::Item::Trait(x) => &x.attrs,
        syn::Item::TraitAlias(x) => &x.attrs,
        syn::Item::Type(x) => &x.attrs,
        syn::Item::Union(x) => &x.attrs,
        syn::Item::Use(x) => &x.attrs,
        _ => &[],
    }
}

impl Tree {
    /// The modules reachable from `root` by `mod` lines.
    fn load(root: &Path) -> Tree {
        let mut t = Tree {
            modules: Vec::new(),
        };
        let dir = root.parent().expect("a root inside a directory").to_owned();
        t.add_file(root, None, dir);
        for m in &mut t.modules {
            let mut nested = NestedUses(Vec::new());
            for i in &mut m.items {
                nested.visit_item_mut(i);
            }
            let uses = m.items.iter().filter_map(|i| match i {
                syn::Item::Use(u) => Some(u.clone()),
                _ => None,
            });
            for u in uses.chain(nested.0) {
                use_leaves(&u.tree, &mut Vec::new(), &mut m.uses);
            }
            m.defines = m.items.iter().filter_map(item_name).collect();
        }
        t
    }

    fn add_file(&mut self, file: &Path, parent: Option<usize>, dir: PathBuf) -> usize {
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut f = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        StripTests.visit_file_mut(&mut f);
        self.add_items(file, parent, dir, f.items)
    }

    fn add_items(
        &mut self,
        file: &Path,
        parent: Option<usize>,
        dir: PathBuf,
        items: Vec<syn::Item>,
    ) -> usize {
        let me = self.modules.len();
        self.modules.push(Module {
            file: file.to_owned(),
            parent,
            children: BTreeMap::new(),
            items: Vec::new(),
            uses: Vec::new(),
            defines: BTreeSet::new(),
        });
        let mut own = Vec::new();
        for item in items {
            let syn::Item::Mod(m) = item else {
                own.push(item);
                continue;
            };
            let name = m.ident.to_string();
            let child = match m.content {
                Some((_, inner)) => self.add_items(file, Some(me), dir.join(&name), inner),
                None => {
                    let flat = dir.join(format!("{name}.rs"));
                    let (path, child_dir) = if flat.exists() {
                        (flat, dir.join(&name))
                    } else {
                        let nested = dir.join(&name).join("mod.rs");
                        assert!(nested.exists(), "mod {name}: no {}", flat.display());
                        (nested, dir.join(&name))
                    };
                    self.add_file(&path, Some(me), child_dir)
                }
            };
            self.modules[me].children.insert(name, child);
        }
        self.modules[me].items = own;
        me
    }

    /// Follows `segments` from module `from` (`crate`, `self`, `super`, a child module, or
    /// a name a `use` there binds) to the module that defines the item they name, through
    /// re-exports. `None`: a path outside the crate, or a local name.
    fn resolve(&self, from: usize, segments: &[String], hops: usize) -> Option<Resolved> {
        let (first, rest) = segments.split_first()?;
        let start = match first.as_str() {
            "crate" => 0,
            "self" => from,
            "super" => self.modules[from].parent?,
            name => match self.modules[from].children.get(name) {
                Some(&c) => c,
                None => return self.through_use(from, name, rest, hops),
            },
        };
        self.descend(start, rest, hops)
    }

    /// Follows `rest` down from module `at`.
    fn descend(&self, mut at: usize, rest: &[String], hops: usize) -> Option<Resolved> {
        for (i, s) in rest.iter().enumerate() {
            if s == "super" {
                at = self.modules[at].parent?;
                continue;
            }
            if let Some(&c) = self.modules[at].children.get(s.as_str()) {
                at = c;
                continue;
            }
            let own = Resolved {
                module: at,
                item: true,
            };
            if self.modules[at].defines.contains(s.as_str()) {
                return Some(own);
            }
            return self.through_use(at, s, &rest[i + 1..], hops).or(Some(own));
        }
        Some(Resolved {
            module: at,
            item: false,
        })
    }

    /// `name` (then `rest`) as module `at`'s `use` binds it.
    fn through_use(&self, at: usize, name: &str, rest: &[String], hops: usize) -> Option<Resolved> {
        if hops >= MAX_HOPS {
            return None;
        }
        let (path, _, _) = self.modules[at]
            .uses
            .iter()
            .find(|(_, bound, glob)| !glob && bound == name)?;
        let mut full = path.clone();
        full.extend(rest.iter().cloned());
        self.resolve(at, &full, hops + 1)
    }
}

/// The name an item defines, if any.
fn item_name(i: &syn::Item) -> Option<String> {
    let id = match i {
        syn::Item::Const(x) => &x.ident,
        syn::Item::Enum(x) => &x.ident,
        syn::Item::Fn(x) => &x.sig.ident,
        syn::Item::Macro(x) => x.ident.as_ref()?,
        syn::Item::Static(x) => &x.ident,
        syn::Item::Struct(x) => &x.ident,
        syn::Item::Trait(x) => &x.ident,
        syn::Item::Type(x) => &x.ident,
        syn::Item::Union(x) => &x.ident,
        _ => return None,
    };
    Some(id.to_string())
}

/// A `use` tree flattened: (path, name it binds, glob).
fn use_leaves(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<UseLeaf>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_leaves(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                let bound = prefix.last().cloned().unwrap_or_default();
                out.push((prefix.clone(), bound, false));
            } else {
                let mut p = prefix.clone();
                p.push(name.clone());
                out.push((p, name, false));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut p = prefix.clone();
            let name = r.ident.to_string();
            if name != "self" {
                p.push(name);
            }
            out.push((p, r.rename.to_string(), false));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), String::new(), true)),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_leaves(t, prefix, out);
            }
        }
    }
}

/// The paths (`a::b::c`) written in `tokens`, macro bodies included.
fn token_paths(tokens: TokenStream, out: &mut Vec<Vec<String>>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let is_colon2 = |i: usize| {
        matches!((trees.get(i), trees.get(i + 1)),
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                if a.as_char() == ':' && b.as_char() == ':' && a.spacing() == proc_macro2::Spacing::Joint)
    };
    let mut i = 0;
    while i < trees.len() {
        match &trees[i] {
            TokenTree::Group(g) => {
                token_paths(g.stream(), out);
                i += 1;
            }
            TokenTree::Ident(id) => {
                // A leading `::` is an extern path; a segment after `::` belongs to a path
                // already read.
                let mut path = vec![id.to_string()];
                let mut j = i + 1;
                while is_colon2(j) {
                    match trees.get(j + 2) {
                        Some(TokenTree::Ident(next)) => {
                            path.push(next.to_string());
                            j += 3;
                        }
                        _ => break,
                    }
                }
                if path.len() > 1 {
                    out.push(path);
                }
                i = j;
            }
            TokenTree::Punct(_) if is_colon2(i) => {
                // `::name…`: skip the whole extern path.
                i += 2;
                while let Some(TokenTree::Ident(_)) = trees.get(i) {
                    i += 1;
                    if is_colon2(i) {
                        i += 2;
                    } else {
                        break;
                    }
                }
            }
            _ => i += 1,
        }
    }
}

/// Every file-to-file import of the crate rooted at `root`.
fn edges(root: &Path) -> Edges {
    let t = Tree::load(root);
    let mut e = Edges::new();
    for (m, module) in t.modules.iter().enumerate() {
        let mut add = |r: Resolved, via: String| {
            let to = t.modules[r.module].file.clone();
            if to != module.file {
                e.entry((module.file.clone(), to)).or_insert(via);
            }
        };
        // A `use` of a module binds a name (its uses are read below); a `use` of an item,
        // or a glob, imports.
        for (path, _, glob) in &module.uses {
            match t.resolve(m, path, 0) {
                Some(r) if *glob || r.item => add(r, format!("use {}", path.join("::"))),
                _ => {}
            }
        }
        let mut paths = Vec::new();
        for i in module
            .items
            .iter()
            .filter(|i| !matches!(i, syn::Item::Use(_)))
        {
            token_paths(i.to_token_stream(), &mut paths);
        }
        for p in paths {
            if let Some(r) = t.resolve(m, &p, 0) {
                add(r, p.join("::"));
            }
        }
    }
    e
}

/// The import loops among the files of the crates rooted at `roots`: each loop's files, with
/// the imports that close it.
fn cycles(roots: &[PathBuf]) -> Vec<String> {
    let mut e = Edges::new();
    for r in roots {
        e.extend(edges(r));
    }
    let files: BTreeSet<&PathBuf> = e.keys().flat_map(|(a, b)| [a, b]).collect();
    let reach = |from: &PathBuf| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(f) = todo.pop() {
            for ((a, b), _) in e.range((f.clone(), PathBuf::new())..) {
                if *a != f {
                    break;
                }
                if seen.insert(b.clone()) {
                    todo.push(b.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&PathBuf, BTreeSet<PathBuf>> =
        files.iter().map(|f| (*f, reach(f))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for f in &files {
        if done.contains(*f) || !reached[f].contains(*f) {
            continue;
        }
        let loop_files: BTreeSet<&PathBuf> = files
            .iter()
            .copied()
            .filter(|g| reached[f].contains(*g) && reached[g].contains(*f))
            .collect();
        let mut text = String::new();
        for ((a, b), via) in &e {
            if loop_files.contains(a) && loop_files.contains(b) {
                text.push_str(&format!("\n  {} -> {}: {via}", a.display(), b.display()));
            }
        }
        done.extend(loop_files.iter().map(|p| (*p).clone()));
        out.push(text);
    }
    out
}

/// The workspace's root (the parent of this crate's directory).
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate inside the workspace")
        .to_owned()
}

fn crate_roots(krate: &str) -> Vec<PathBuf> {
    let src = workspace().join(krate).join("src");
    let roots: Vec<PathBuf> = ["lib.rs", "main.rs"]
        .iter()
        .map(|r| src.join(r))
        .filter(|p| p.exists())
        .collect();
    assert!(!roots.is_empty(), "{}: no lib.rs or main.rs", src.display());
    roots
}

fn assert_no_cycles(krate: &str) {
    let roots = crate_roots(krate);
    // A reader that lost its way would find no loops because it found no imports.
    let imports: usize = roots.iter().map(|r| edges(r).len()).sum();
    assert!(imports > 50, "{krate}: only {imports} imports read");
    let found = cycles(&roots);
    let root = format!("{}/", workspace().display());
    assert!(
        found.is_empty(),
        "{krate}: files that import each other (file -> file: the path that imports):{}",
        found.join("\n").replace(&root, "")
    );
}

#[test]
fn no_two_files_of_nicemu_guest_import_each_other() {
    assert_no_cycles("nicemu-guest");
}

#[test]
fn no_two_files_of_nicemu_provision_import_each_other() {
    assert_no_cycles("nicemu-provision");
}

#[test]
fn no_two_files_of_nicemu_import_each_other() {
    assert_no_cycles("nicemu");
}

/// Writes `files` (path, text) under a fresh directory and returns it.
fn tree_of(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("import-cycles-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

#[test]
fn loops_through_use_paths_super_and_macros_are_found() {
    let dir = tree_of(
        "loops",
        &[
            ("main.rs", "mod a;\nmod b;\nmod c;\nmod d;\nfn main() {}\n"),
            // a -> b by `use`, b -> a by a path inside a macro.
            ("a.rs", "use crate::b::B;\npub struct A;\n"),
            (
                "b.rs",
                "pub struct B;\nfn f() { println!(\"{}\", crate::a::A as usize); }\n",
            ),
            // d/mod.rs -> d/x.rs by a child path, d/x.rs -> d/mod.rs by `super`.
            ("d/mod.rs", "mod x;\npub struct D;\nfn f() { x::g(); }\n"),
            ("d/x.rs", "pub fn g() { let _ = super::D; }\n"),
            // c imports a, nothing imports c: no loop.
            ("c.rs", "use crate::a;\nfn f() -> a::A { a::A }\n"),
        ],
    );
    let found = cycles(&[dir.join("main.rs")]);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("a.rs -> ") && found[0].contains("b.rs -> "));
    assert!(found[0].contains("crate::a::A"), "{}", found[0]);
    assert!(found[1].contains("mod.rs -> ") && found[1].contains("x.rs -> "));
    assert!(!found.iter().any(|f| f.contains("c.rs")));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn mod_lines_tests_and_extern_paths_are_no_imports() {
    let dir = tree_of(
        "none",
        &[
            ("main.rs", "mod a;\nmod b;\nfn main() { a::f(); }\n"),
            (
                "a.rs",
                "pub fn f() { let _ = ::std::mem::size_of::<u8>(); crate::b::g(); }\n",
            ),
            // Only b's tests and a module alias name `a`.
            (
                "b.rs",
                "use crate::a;\npub fn g() {}\n#[cfg(test)]\nmod tests { use crate::a::f; }\n\
                 impl S { #[cfg(test)] fn t() { crate::a::f(); } }\nstruct S;\n",
            ),
        ],
    );
    assert_eq!(cycles(&[dir.join("main.rs")]), Vec::<String>::new());
    std::fs::remove_dir_all(dir).unwrap();
}
