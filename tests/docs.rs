//! The documentation agrees with the code and the CI script where a
//! reader acts on what it says: every environment variable the code reads
//! is listed, tables are not broken apart, and the fuzz smoke run's length
//! is the one `.ci/run` uses.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `std::env::var("NAME")` with a literal name, outside tests.
fn variables_read(text: &str) -> Vec<String> {
    let text = text.split("#[cfg(test)]").next().unwrap_or(text);
    let mut names = Vec::new();
    for call in ["env::var(\"", "env::var_os(\"", "env(\""] {
        for (at, _) in text.match_indices(call) {
            let rest = &text[at + call.len()..];
            if let Some(end) = rest.find('"') {
                names.push(rest[..end].to_owned());
            }
        }
    }
    names
}

#[test]
fn every_environment_variable_the_service_reads_is_documented() {
    let docs = read("docs/configuration.md");
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut missing = Vec::new();
    let mut seen = 0;
    for file in files {
        for name in variables_read(&std::fs::read_to_string(&file).unwrap()) {
            seen += 1;
            if !docs.contains(&format!("`{name}`")) {
                missing.push(format!("{name} ({})", file.display()));
            }
        }
    }
    assert!(
        seen >= 5,
        "the scan found only {seen} variables: it is broken"
    );
    assert!(
        missing.is_empty(),
        "read but not listed in docs/configuration.md: {missing:?}"
    );
    // What a library reads on the service's behalf.
    for name in ["HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE", "RUST_LOG"] {
        assert!(docs.contains(&format!("`{name}`")), "{name}");
    }
}

#[test]
fn no_table_in_the_docs_is_split_by_a_blank_line() {
    let mut files = vec![PathBuf::from("README.md")];
    for dir in ["docs", "deploy"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                files.push(path.strip_prefix(root()).unwrap().to_owned());
            }
        }
    }
    let mut split = Vec::new();
    for rel in files {
        let text = read(&rel.to_string_lossy());
        let lines: Vec<&str> = text.lines().collect();
        for (i, w) in lines.windows(3).enumerate() {
            // A table row, a blank line, then a row that is no table's
            // header (a header is followed by its `|---|` line).
            let header_follows = lines
                .get(i + 3)
                .is_some_and(|l| l.starts_with("|-") || l.starts_with("| -"));
            if w[0].starts_with('|')
                && w[1].trim().is_empty()
                && w[2].starts_with('|')
                && !header_follows
            {
                split.push(format!("{}:{}", rel.display(), i + 3));
            }
        }
    }
    assert!(
        split.is_empty(),
        "a table row after a blank line: {split:?}"
    );
}

#[test]
fn the_fuzz_readme_gives_the_smoke_length_ci_runs() {
    let ci = read(".ci/run");
    let seconds = ci
        .split("SMOKE_SECONDS=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect(".ci/run sets SMOKE_SECONDS");
    let readme = read("fuzz/README.md");
    let said: Vec<&str> = readme
        .split("SMOKE_SECONDS=")
        .skip(1)
        .filter_map(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .collect();
    assert!(!said.is_empty(), "fuzz/README.md names no SMOKE_SECONDS");
    assert!(
        said.iter().all(|s| *s == seconds),
        "fuzz/README.md says {said:?}, .ci/run {seconds}"
    );
}

/// Issue 50: the seeds stay packed, so that the tree is the project's.
#[test]
fn the_fuzz_seeds_are_a_file_per_target() {
    let mut seeds = 0;
    for entry in std::fs::read_dir(root().join("fuzz/seeds")).unwrap() {
        let path = entry.unwrap().path();
        assert!(
            path.is_file() && path.extension().is_some_and(|e| e == "seeds"),
            "fuzz/seeds holds {} (seeds are packed: python3 fuzz/seed.py --pack)",
            path.display()
        );
        seeds += 1;
    }
    assert!(seeds > 0, "no packed seeds in fuzz/seeds");
}

/// Issue 50: the listener table is the one source; the configuration
/// reference gives each listener's endpoint key with its default.
#[test]
fn each_listeners_default_endpoint_is_documented() {
    let docs = read("docs/configuration.md");
    for l in toolscore::listener::Listener::ALL {
        let row = format!("| `{}.endpoint` | `{}` |", l.key(), l.default_endpoint());
        assert!(
            docs.contains(&row),
            "docs/configuration.md lacks the row starting {row}"
        );
    }
}
