//! The workspace's layout rules, read from the sources: no import circle
//! between the modules of a crate, and no source file over 500 lines.
//!
//! A module "imports" another when its code (not its comments, not its
//! `#[cfg(test)] mod tests`) names a path into it: `crate::a::b`,
//! `super::a`, or a `use` tree below them. A module's own ancestors and
//! descendants do not count: a parent re-exporting its children and a child
//! using its parent's items is how Rust modules nest. Everything else must
//! form layers: if `a` uses `b`, nothing `b` uses leads back to `a`.

mod source;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use source::{rust_files, without_comment, workspace};

/// The crates whose sources are checked.
const CRATES: &[&str] = &[
    "game-api",
    "lobby-api",
    "protocol",
    "engine",
    "lockstep",
    "netcode",
    "web-bindings",
    "server",
    "host-daemon",
    "loadgen",
];

/// `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`; `lib.rs` and `main.rs`
/// (and binaries under `src/bin`) are the root, "".
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return Vec::new();
    }
    if parts
        .last()
        .is_some_and(|p| p == "mod" || p == "lib" || p == "main")
    {
        parts.pop();
    }
    parts
}

/// The code of a file without comments and without its test module.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(without_comment)
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths a `use` tree (or a plain path) starting at `rest` names, each
/// as its segments: `a::{b, c::d}` gives `a::b` and `a::c::d`.
fn paths_at(rest: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    parse_tree(rest.trim_start(), Vec::new(), &mut out);
    out
}

/// Parses one use tree at the start of `s` below `prefix`; returns the rest.
fn parse_tree<'a>(s: &'a str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> &'a str {
    let mut path = prefix;
    let mut s = s.trim_start();
    loop {
        if let Some(inner) = s.strip_prefix('{') {
            let mut inner = inner;
            loop {
                inner = inner.trim_start();
                if let Some(after) = inner.strip_prefix('}') {
                    return after;
                }
                if inner.is_empty() {
                    return inner;
                }
                inner = parse_tree(inner, path.clone(), out);
                inner = inner.trim_start();
                inner = inner.strip_prefix(',').unwrap_or(inner);
            }
        }
        let end = s.find(|c: char| !is_ident(c)).unwrap_or(s.len());
        if end == 0 {
            out.push(path);
            return s;
        }
        path.push(s[..end].to_owned());
        s = &s[end..];
        match s.strip_prefix("::") {
            Some(after) => s = after.trim_start(),
            None => {
                out.push(path);
                // Skip an `as name` and stop at the tree's end.
                let stop = s.find([',', '}', ';']).unwrap_or(s.len());
                return &s[stop..];
            }
        }
    }
}

/// The module a path names: its longest prefix that is a module.
fn target(modules: &BTreeSet<Vec<String>>, path: &[String]) -> Vec<String> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
        .unwrap_or_default()
}

fn related(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// Each module's imports of other (unrelated) modules of the crate.
fn import_graph(crate_dir: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let src = crate_dir.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<_> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut graph: BTreeMap<_, BTreeSet<_>> = BTreeMap::new();
    for file in &files {
        let me = module_of(&src, file);
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        let mut named = Vec::new();
        for (at, _) in code.match_indices("crate::") {
            if code[..at].ends_with(|c: char| is_ident(c) || c == '$') {
                continue;
            }
            named.extend(paths_at(&code[at + "crate::".len()..]));
        }
        for (at, _) in code.match_indices("super::") {
            if code[..at].ends_with(|c: char| is_ident(c) || c == ':') {
                continue;
            }
            // `super` of a `mod.rs` or a leaf file is the parent module.
            let parent = me[..me.len().saturating_sub(1)].to_vec();
            for path in paths_at(&code[at + "super::".len()..]) {
                named.push(parent.iter().cloned().chain(path).collect());
            }
        }
        let edges = graph.entry(me.clone()).or_default();
        for path in named {
            let to = target(&modules, &path);
            if !related(&me, &to) {
                edges.insert(to);
            }
        }
    }
    graph
}

/// The strongly connected groups of more than one module (Tarjan).
fn circles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'g Vec<String>, usize>,
        low: BTreeMap<&'g Vec<String>, usize>,
        stack: Vec<&'g Vec<String>>,
        on_stack: BTreeSet<&'g Vec<String>>,
        found: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g Vec<String>) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    group.push(w.join("::"));
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut found = Vec::new();
    for name in CRATES {
        let graph = import_graph(&workspace().join(name));
        for group in circles(&graph) {
            // Name the imports inside the circle, so it is clear what to move.
            let inside: Vec<String> = graph
                .iter()
                .flat_map(|(from, to)| to.iter().map(move |t| (from.join("::"), t.join("::"))))
                .filter(|(from, to)| group.contains(from) && group.contains(to))
                .map(|(from, to)| format!("{from} -> {to}"))
                .collect();
            found.push(format!("{name}: {}", inside.join(", ")));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_checker_sees_a_circle_and_a_use_tree() {
    let m = |s: &str| s.split("::").map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        paths_at("a::{b, c::{d as e, f}}, g;"),
        [m("a::b"), m("a::c::d"), m("a::c::f")]
    );
    let graph = BTreeMap::from([
        (m("a"), BTreeSet::from([m("b")])),
        (m("b"), BTreeSet::from([m("c")])),
        (m("c"), BTreeSet::from([m("a")])),
        (m("d"), BTreeSet::from([m("a")])),
    ]);
    assert_eq!(circles(&graph), [vec!["a", "b", "c"]]);
}

/// Source files over this many lines (their test module not counted) must
/// be split by concept.
const MAX_LINES: usize = 500;

#[test]
fn no_source_file_grows_past_500_lines() {
    let root = workspace();
    let mut wrong = Vec::new();
    for name in CRATES {
        let mut files = Vec::new();
        rust_files(&root.join(name).join("src"), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let code = text
                .find("#[cfg(test)]\nmod tests")
                .map_or(&text[..], |at| &text[..at]);
            let lines = code.lines().count();
            let rel = file
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if lines > MAX_LINES {
                wrong.push(format!("{rel} has {lines} lines: split it by concept"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
