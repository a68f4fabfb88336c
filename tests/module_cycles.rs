//! No import cycle between the top-level modules of `src/`: each stage can
//! be read, tested and changed from the modules below it alone.
//!
//! Every `crate::x` in a file of module `y` (comments and unit tests
//! included, as a reader sees them) is an edge `y → x`, as is a `super::`
//! path that climbs out of `y`. The test fails naming each strongly
//! connected component of more than one module, with the files behind its
//! edges.
#![allow(clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's top-level module and its module depth (`x.rs`, `x/mod.rs`: 1;
/// `x/y.rs`: 2), or `None` for the crate roots and binaries.
fn module_of(relative: &Path) -> Option<(String, usize)> {
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let top = parts[0].trim_end_matches(".rs").to_owned();
    if matches!(top.as_str(), "main" | "lib" | "bin") {
        return None;
    }
    let depth = parts.len() - usize::from(parts.last().is_some_and(|f| f == "mod.rs"));
    Some((top, depth))
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The identifier starting at `i`.
fn ident_at(text: &[u8], i: usize) -> &str {
    let end = (i..text.len())
        .find(|&j| !is_ident(text[j]))
        .unwrap_or(text.len());
    std::str::from_utf8(&text[i..end]).unwrap_or("")
}

/// The first segment of each path in a `{…}` group starting at `open`.
fn group_heads(text: &[u8], open: usize) -> Vec<String> {
    let mut heads = Vec::new();
    let (mut depth, mut expect_head) = (0usize, true);
    for i in open..text.len() {
        match text[i] {
            b'{' => {
                depth += 1;
                expect_head = depth == 1;
            }
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            b',' if depth == 1 => expect_head = true,
            c if expect_head && depth == 1 && is_ident(c) => {
                heads.push(ident_at(text, i).to_owned());
                expect_head = false;
            }
            _ => {}
        }
    }
    heads
}

/// How many inline `mod name { … }` blocks enclose each byte of the code,
/// skipping comments, strings and character literals.
fn inline_mod_depths(text: &[u8]) -> Vec<usize> {
    let mut depths = vec![0; text.len()];
    let (mut braces, mut mods): (usize, Vec<usize>) = (0, Vec::new());
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let skip = if rest.starts_with(b"//") {
            rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len())
        } else if rest.starts_with(b"/*") {
            rest.windows(2)
                .position(|w| w == b"*/")
                .map_or(rest.len(), |p| p + 2)
        } else if rest.starts_with(b"r#") || rest.starts_with(b"r\"") {
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let body = 2 + hashes;
            rest[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(rest.len(), |p| body + p + close.len())
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            j + 1
        } else if rest[0] == b'\'' && rest.len() > 2 && (rest[1] == b'\\' || rest[2] == b'\'') {
            // A character literal, not a lifetime.
            rest[2..]
                .iter()
                .position(|&c| c == b'\'')
                .map_or(rest.len(), |p| p + 3)
        } else if rest.starts_with(b"mod ") && (i == 0 || !is_ident(text[i - 1])) {
            let name_end = 4 + ident_at(rest, 4).len();
            let gap = rest[name_end..]
                .iter()
                .take_while(|c| c.is_ascii_whitespace())
                .count();
            if rest.get(name_end + gap) == Some(&b'{') {
                mods.push(braces);
            }
            1
        } else {
            match rest[0] {
                b'{' => braces += 1,
                b'}' => {
                    braces = braces.saturating_sub(1);
                    if mods.last() == Some(&braces) {
                        mods.pop();
                    }
                }
                _ => {}
            }
            1
        };
        let end = (i + skip).min(text.len());
        depths[i..end].fill(mods.len());
        i = end;
    }
    depths
}

/// The top-level modules the file's text refers to.
fn references(text: &str, depth: usize) -> BTreeSet<String> {
    let bytes = text.as_bytes();
    let mods = inline_mod_depths(bytes);
    let mut out = BTreeSet::new();
    let starts_word = |i: usize| i == 0 || !is_ident(bytes[i - 1]);
    for (i, _) in text.match_indices("crate::") {
        if !starts_word(i) {
            continue;
        }
        let after = i + "crate::".len();
        match bytes.get(after) {
            Some(b'{') => out.extend(group_heads(bytes, after)),
            Some(&c) if is_ident(c) => {
                out.insert(ident_at(bytes, after).to_owned());
            }
            _ => {}
        }
    }
    for (i, _) in text.match_indices("super::") {
        if !starts_word(i) || text[..i].ends_with("super::") {
            continue;
        }
        let mut after = i;
        let mut climbs = 0;
        while text[after..].starts_with("super::") {
            climbs += 1;
            after += "super::".len();
        }
        // Climbing as high as the module's own depth leaves it.
        if climbs >= depth + mods[i] {
            match bytes.get(after) {
                Some(b'{') => out.extend(group_heads(bytes, after)),
                Some(&c) if is_ident(c) => {
                    out.insert(ident_at(bytes, after).to_owned());
                }
                _ => {}
            }
        }
    }
    out
}

/// Tarjan's strongly connected components of more than one node.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in self.edges.get(v).into_iter().flatten() {
                if !self.index.contains_key(w.as_str()) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w.as_str()]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w.as_str()) {
                    let low = self.low[v].min(self.index[w.as_str()]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let at = self
                    .stack
                    .iter()
                    .rposition(|&w| w == v)
                    .expect("on the stack");
                let mut component: Vec<String> =
                    self.stack.drain(at..).map(str::to_owned).collect();
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn top_level_modules_import_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let parsed: Vec<(String, usize, PathBuf, String)> = files
        .iter()
        .filter_map(|path| {
            let relative = path.strip_prefix(&src).expect("under src/");
            let (top, depth) = module_of(relative)?;
            let text = std::fs::read_to_string(path).expect("a readable source file");
            Some((top, depth, relative.to_owned(), text))
        })
        .collect();
    let modules: BTreeSet<&str> = parsed.iter().map(|(top, ..)| top.as_str()).collect();
    assert!(modules.len() > 10, "found the modules: {modules:?}");
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut because: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for (top, depth, relative, text) in &parsed {
        for to in references(text, *depth) {
            if to != *top && modules.contains(to.as_str()) {
                edges.entry(top.clone()).or_default().insert(to.clone());
                because
                    .entry((top.clone(), to))
                    .or_default()
                    .insert(relative.display().to_string());
            }
        }
    }
    let found = cycles(&edges);
    let mut report = String::new();
    for component in &found {
        report += &format!("cycle among {component:?}:\n");
        for ((from, to), files) in &because {
            if component.contains(from) && component.contains(to) {
                report += &format!("  {from} -> {to}: {files:?}\n");
            }
        }
    }
    assert!(
        found.is_empty(),
        "import cycles between top-level modules of src/:\n{report}"
    );
}

#[test]
fn the_reader_sees_groups_and_escaping_super_paths() {
    let text = "use crate::{a::B, c as d, e::{f, g}};\nmod tests {\n    use super::super::h;\n    use super::i;\n}\nuse super::j; // '{'\n";
    let found: Vec<String> = references(text, 1).into_iter().collect();
    assert_eq!(found, ["a", "c", "e", "h", "j"]);
    let found: Vec<String> = references(text, 2).into_iter().collect();
    assert_eq!(found, ["a", "c", "e"]);
}

/// A file's module path under `src/` (`api/http.rs`: `api::http`;
/// `api/mod.rs`: `api`), or `None` for the crate roots and binaries.
fn module_path(relative: &Path) -> Option<Vec<String>> {
    module_of(relative)?;
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|f| f == "mod.rs") {
        parts.pop();
    } else if let Some(last) = parts.last_mut() {
        *last = last.trim_end_matches(".rs").to_owned();
    }
    Some(parts)
}

/// The path written at `at` (`a::b::{c, d::e}` gives `a::b::c` and
/// `a::b::d`), each as far as its identifiers go.
fn paths_at(bytes: &[u8], mut at: usize, base: Vec<String>) -> Vec<Vec<String>> {
    let mut path = base;
    loop {
        match bytes.get(at) {
            Some(b'{') => {
                return group_heads(bytes, at)
                    .into_iter()
                    .map(|head| path.iter().cloned().chain([head]).collect())
                    .collect();
            }
            Some(&c) if is_ident(c) => {
                let ident = ident_at(bytes, at);
                path.push(ident.to_owned());
                at += ident.len();
                if !bytes[at..].starts_with(b"::") {
                    return vec![path];
                }
                at += 2;
            }
            _ => return vec![path],
        }
    }
}

/// The absolute module paths the text of the module at `module` names
/// through `crate::` or `super::` (paths inside the file left out).
fn absolute_references(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let bytes = text.as_bytes();
    let mods = inline_mod_depths(bytes);
    let starts_word = |i: usize| i == 0 || !is_ident(bytes[i - 1]);
    let mut out = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        if starts_word(i) {
            out.extend(paths_at(bytes, i + "crate::".len(), Vec::new()));
        }
    }
    for (i, _) in text.match_indices("super::") {
        if !starts_word(i) || text[..i].ends_with("super::") {
            continue;
        }
        let (mut after, mut climbs) = (i, 0usize);
        while text[after..].starts_with("super::") {
            climbs += 1;
            after += "super::".len();
        }
        // Climbing out of the inline modules first, then out of the file's.
        let Some(out_of_file) = climbs.checked_sub(mods[i]).filter(|&c| c > 0) else {
            continue;
        };
        let Some(kept) = module.len().checked_sub(out_of_file) else {
            continue;
        };
        out.extend(paths_at(bytes, after, module[..kept].to_vec()));
    }
    out
}

/// Issue 50: no cycle between sibling modules either (`api/http.rs` and
/// `api/sse.rs`, `pyvalue/eq.rs` and `pyvalue/hash.rs`): within each
/// directory, each child module can be read from those below it. A parent
/// (`mod.rs`) is not its children's sibling: what they take from it is
/// what it declares for all of them.
#[test]
fn sibling_modules_import_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    // Per parent module: edges between its children, and the files behind them.
    type Graph = BTreeMap<String, BTreeSet<String>>;
    let mut graphs: BTreeMap<Vec<String>, Graph> = BTreeMap::new();
    let mut because: BTreeMap<(Vec<String>, String, String), BTreeSet<String>> = BTreeMap::new();
    for path in &files {
        let relative = path.strip_prefix(&src).expect("under src/");
        let Some(module) = module_path(relative) else {
            continue;
        };
        let text = std::fs::read_to_string(path).expect("a readable source file");
        for to in absolute_references(&text, &module) {
            for depth in 1..module.len() {
                let parent = &module[..depth];
                if to.len() > depth && to[..depth] == *parent && to[depth] != module[depth] {
                    let (from, to) = (module[depth].clone(), to[depth].clone());
                    graphs
                        .entry(parent.to_vec())
                        .or_default()
                        .entry(from.clone())
                        .or_default()
                        .insert(to.clone());
                    because
                        .entry((parent.to_vec(), from, to))
                        .or_default()
                        .insert(relative.display().to_string());
                }
            }
        }
    }
    assert!(
        graphs.contains_key(&vec!["api".to_owned()]),
        "found no edge between api's modules: {:?}",
        graphs.keys().collect::<Vec<_>>()
    );
    let mut report = String::new();
    for (parent, edges) in &graphs {
        for component in cycles(edges) {
            report += &format!("cycle in {} among {component:?}:\n", parent.join("::"));
            for ((p, from, to), files) in &because {
                if p == parent && component.contains(from) && component.contains(to) {
                    report += &format!("  {from} -> {to}: {files:?}\n");
                }
            }
        }
    }
    assert!(
        report.is_empty(),
        "import cycles between sibling modules:\n{report}"
    );
}

#[test]
fn absolute_paths_are_read_from_crate_and_escaping_super() {
    let module = ["api".to_owned(), "http".to_owned()];
    let text = "use crate::{a::B, c};\nuse super::sse::watch;\nuse super::super::store::{x, y::z};\nmod tests {\n    use super::*;\n    use super::super::openapi;\n}\n";
    let found: Vec<String> = absolute_references(text, &module)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        found,
        [
            "a",
            "c",
            "api::sse::watch",
            "store::x",
            "store::y",
            "api::openapi"
        ]
    );
}
