//! The Dockerfile: its stages against `config/container.yaml`, `hadolint`,
//! and its build stage replayed in a copy of the build context.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use toolscore::config::Config;

use super::tools::{Outcome, copy_dir, outcome, tools};
use super::{LISTENERS, bound_ports, read, root, validate_config, without, yaml};

mod parser;

fn dockerfile() -> (parser::GlobalArgs, Vec<parser::Stage>) {
    parser::parse(&read("Dockerfile")).unwrap_or_else(|e| panic!("Dockerfile: {e}"))
}

/// The reading the tests below rely on: a broken file is refused, by it and
/// by hadolint (the real parser), and continuation lines, comments, quotes
/// and the two forms of a command are read as Docker reads them.
#[test]
fn the_dockerfile_parser_refuses_a_broken_file() {
    let broken = "FROM\nRUN\n";
    let err = parser::parse(broken).unwrap_err();
    assert!(err.contains("line 1: FROM without arguments"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("Dockerfile");
    std::fs::write(&path, broken).unwrap();
    let out = tools().run(
        "hadolint",
        [
            "--no-color".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
            path.as_os_str(),
        ],
    );
    let findings: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        !out.ok && findings[0]["code"] == "DL1000",
        "hadolint takes {broken:?}: {}",
        out.text()
    );

    for (bad, why) in [
        ("RUN true\nFROM a\n", "line 1: RUN before the first FROM"),
        ("FROM a\nRUNN true\n", "line 2: no instruction RUNN"),
        ("FROM a b c d\n", "is not `image [AS name]`"),
        ("FROM a\nCMD [\"x\", y]\n", "not a JSON array of strings"),
        ("FROM a\nLABEL a=\"b\n", "unterminated"),
        ("FROM a\nLABEL a b\n", "is not key=value"),
        ("FROM a\nCOPY x\n", "needs a source and a destination"),
        ("FROM a\nRUN <<EOF\nx\nEOF\n", "heredocs"),
        ("# escape=`\nFROM a\n", "escape directive"),
        ("# a comment\n", "no FROM"),
    ] {
        let err = parser::parse(bad).expect_err(bad);
        assert!(err.contains(why), "{bad:?}: {err}");
    }

    let (args, stages) = parser::parse(
        "ARG V=1\nFROM a:${V} AS b\nEXPOSE 1 2\nUSER x\n\
         RUN one \\\n  # a comment inside\n\n && two\n\
         LABEL k=\"a \\\"b\\\"\" \\\n  l='c d'\n\
         COPY --from=b --chown=1:1 s1 s2 /d\n\
         ENTRYPOINT [\"/e\", \"f\"]\ncmd serve --x\n",
    )
    .unwrap();
    assert_eq!(args, [("V".to_owned(), Some("1".to_owned()))]);
    let s = &stages[0];
    assert_eq!((s.name.as_deref(), s.base.as_str()), (Some("b"), "a:${V}"));
    assert_eq!(s.all("EXPOSE"), ["1 2"]);
    assert_eq!(s.all("RUN"), ["/bin/sh -c one  && two"]);
    assert_eq!(
        s.labels,
        [("k".into(), "a \"b\"".into()), ("l".into(), "c d".into())]
    );
    assert_eq!(
        s.copies,
        [(
            Some("b".into()),
            vec!["s1".into(), "s2".into()],
            "/d".into()
        )]
    );
    assert_eq!(
        s.entrypoint.as_deref(),
        Some(&["/e".into(), "f".into()][..])
    );
    assert_eq!(
        s.cmd.as_deref(),
        Some(&["/bin/sh".into(), "-c".into(), "serve --x".into()][..])
    );
}

#[test]
fn dockerfile_has_a_pinned_build_stage_and_a_small_runtime_stage() {
    let (global_args, stages) = dockerfile();
    assert_eq!(stages.len(), 3, "{stages:#?}");
    let (build, symbols, runtime) = (&stages[0], &stages[1], &stages[2]);
    // The runtime's binary is stripped; its symbols are a stage of their
    // own (never the default target: the runtime stage comes last).
    assert!(
        build
            .all("RUN")
            .iter()
            .any(|r| r.contains("--strip-all") && r.contains("--add-gnu-debuglink")),
        "the build stage strips the binary, keeping a debuglink"
    );
    assert_eq!(symbols.base, "scratch");
    assert_eq!(symbols.name.as_deref(), Some("debug-symbols"));

    // The Rust image is official and pinned to a version, not `latest`.
    let rust_version = global_args
        .iter()
        .find(|(n, _)| n == "RUST_VERSION")
        .and_then(|(_, v)| v.clone())
        .expect("ARG RUST_VERSION=x.y.z before the first FROM");
    assert!(
        rust_version.split('.').count() == 3
            && rust_version.split('.').all(|p| p.parse::<u32>().is_ok()),
        "RUST_VERSION {rust_version:?} is not a full version"
    );
    let base = build.base.replace("${RUST_VERSION}", &rust_version);
    assert!(
        base.starts_with("docker.io/library/rust:") || base.starts_with("rust:"),
        "{base}"
    );
    assert!(!base.contains("latest"), "{base}");
    let toolchain: Vec<u32> = rust_version
        .split('.')
        .map(|p| p.parse().unwrap())
        .collect();
    assert!(
        toolchain >= vec![1, 85, 0],
        "the crate needs Rust 1.85 (edition 2024)"
    );

    // Runtime: distroless cc (or debian-slim), on the same Debian as the build.
    assert!(
        runtime.base == "gcr.io/distroless/cc-debian12:nonroot"
            || runtime.base.starts_with("debian:"),
        "{}",
        runtime.base
    );
    if runtime.base.contains("debian12") {
        assert!(
            base.ends_with("-bookworm"),
            "build on Debian 12 too: {base}"
        );
    }
    assert!(runtime.name.is_some());
    assert!(build.name.as_deref() == Some("build"));
}

#[test]
fn dockerfile_caches_dependencies_before_the_source() {
    let (_, stages) = dockerfile();
    let build = &stages[0];
    let copy_of = |what: &str| {
        build
            .position(|k, a| k == "COPY" && a.split_whitespace().any(|s| s == what))
            .unwrap_or_else(|| panic!("the build stage copies {what}"))
    };
    let builds: Vec<usize> = build
        .instructions
        .iter()
        .enumerate()
        .filter(|(_, (k, a))| k == "RUN" && a.contains("cargo build --release --locked"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(builds.len(), 2, "a dependency build and the real build");
    for manifest in ["Cargo.toml", "Cargo.lock", "build.rs", "proto"] {
        assert!(
            copy_of(manifest) < builds[0],
            "{manifest} before the first build"
        );
    }
    assert!(builds[0] < copy_of("src") && copy_of("src") < builds[1]);
    assert!(
        builds[0] < copy_of("benches") && copy_of("benches") < builds[1],
        "benches/ after the dependency build: the manifest declares a bench"
    );
    assert!(
        copy_of("config") < builds[1],
        "include_str! needs config/default.yaml"
    );
    // The stub build compiles a stub crate, and the real one rebuilds it.
    assert!(build.instructions[builds[0]].1.contains("src/main.rs"));
    assert!(
        build.instructions[builds[1]]
            .1
            .contains("touch src/main.rs src/lib.rs")
    );
}

#[test]
fn dockerfile_runtime_stage_is_non_root_and_has_no_healthcheck() {
    let (_, stages) = dockerfile();
    let runtime = stages.last().unwrap();
    let users = runtime.all("USER");
    let user = users.last().expect("the runtime stage sets USER");
    assert!(
        !["root", "0", "0:0", "root:root"].contains(user),
        "USER {user}"
    );
    for stage in &stages {
        assert!(
            stage.all("HEALTHCHECK").is_empty(),
            "probes live in Kubernetes"
        );
    }
    assert_eq!(
        runtime.entrypoint.as_deref(),
        Some(&["/usr/local/bin/toolscore".to_owned()][..])
    );
    let binary = runtime
        .copies
        .iter()
        .find(|(_, _, dest)| dest == "/usr/local/bin/toolscore")
        .expect("the binary is copied");
    assert_eq!(binary.0.as_deref(), stages[0].name.as_deref());

    let labels: BTreeMap<&str, &str> = runtime
        .labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    for key in ["title", "description", "version", "licenses", "revision"] {
        let key = format!("org.opencontainers.image.{key}");
        assert!(labels.contains_key(key.as_str()), "label {key}");
    }
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0");
    // Numeric, so that Kubernetes' runAsNonRoot can check it without the
    // chart's runAsUser (hadolint DL3066 would flag a name too).
    assert_eq!(*user, "65532:65532");
    let version_arg = format!("VERSION={}", env!("CARGO_PKG_VERSION"));
    assert!(
        runtime.all("ARG").contains(&version_arg.as_str()),
        "the image version defaults to the crate's: ARG {version_arg}"
    );
}

#[test]
fn dockerfile_runs_the_container_config_and_exposes_exactly_its_ports() {
    let (_, stages) = dockerfile();
    let runtime = stages.last().unwrap();
    let cmd = runtime.cmd.clone().expect("CMD");
    assert_eq!(cmd[..2], ["serve", "--config"]);
    let config_path = &cmd[2];
    let copied = runtime
        .copies
        .iter()
        .find(|(_, _, dest)| dest == config_path)
        .unwrap_or_else(|| panic!("nothing is copied to {config_path}"));
    assert_eq!(copied.0, None, "copied from the build context");
    assert_eq!(copied.1, ["config/container.yaml"]);

    let exposed: BTreeSet<u16> = runtime
        .all("EXPOSE")
        .iter()
        .flat_map(|a| a.split_whitespace())
        .map(|p| p.trim_end_matches("/tcp").parse().unwrap())
        .collect();
    let config = Config::load(&root().join("config/container.yaml")).unwrap();
    assert_eq!(exposed, bound_ports(&config));
    assert_eq!(exposed, BTreeSet::from([4317, 4318, 8080, 8081]));
}

#[test]
fn container_config_validates() {
    validate_config(&root().join("config/container.yaml")).unwrap();
}

#[test]
fn container_config_is_the_default_with_listeners_on_all_interfaces() {
    let default = yaml("config/default.yaml");
    let container = yaml("config/container.yaml");
    let differ: Vec<&str> = LISTENERS
        .iter()
        .copied()
        .chain(["store.sqlite.path", "wal.dir"])
        .collect();
    assert_eq!(
        without(container.clone(), &differ),
        without(default, &differ),
        "config/container.yaml must be config/default.yaml with only the endpoints, the database path and the log directory changed"
    );
    // The database is in the image's volume, a directory the user owns.
    assert_eq!(
        container["store"]["sqlite"]["path"],
        "/var/lib/toolscore/results.db"
    );
    let (_, stages) = dockerfile();
    let runtime = stages.last().unwrap();
    assert!(
        runtime
            .copies
            .iter()
            .any(|(from, src, dest)| from.as_deref() == Some("build")
                && src == &["/src/data"]
                && dest == "/var/lib/toolscore"),
        "the runtime stage creates /var/lib/toolscore"
    );
    assert!(
        runtime
            .all("VOLUME")
            .iter()
            .any(|v| v.contains("/var/lib/toolscore")),
        "/var/lib/toolscore is a VOLUME"
    );
    assert!(
        read("Dockerfile").contains("--chown=65532:65532 /src/data /var/lib/toolscore"),
        "owned by the user toolscore runs as"
    );
    let config = Config::load(&root().join("config/container.yaml")).unwrap();
    for addr in [
        config.receivers.grpc.endpoint,
        config.receivers.http.endpoint,
        config.api.http.endpoint,
        config.api.grpc.endpoint,
    ] {
        assert!(addr.ip().is_unspecified(), "{addr} binds every interface");
    }
    // The four endpoints are written out, not left to the 127.0.0.1 defaults.
    for key in LISTENERS {
        let mut node = &container;
        for part in key.split('.') {
            node = node.get(part).unwrap_or_else(|| panic!("{key} is set"));
        }
        assert!(node.as_str().unwrap().starts_with("0.0.0.0:"), "{key}");
    }
}

#[test]
fn hadolint_passes_the_dockerfile_at_warning_level() {
    let out = tools().run(
        "hadolint",
        ["--no-color", "--failure-threshold", "warning", "Dockerfile"],
    );
    assert!(out.ok, "{}", out.text());
    // It does fail on a warning: an unpinned base image (DL3007).
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("Dockerfile");
    std::fs::write(&bad, "FROM debian:latest\nUSER 65532\n").unwrap();
    let out = tools().run(
        "hadolint",
        [
            "--no-color".as_ref(),
            "--failure-threshold".as_ref(),
            "warning".as_ref(),
            bad.as_os_str(),
        ],
    );
    assert!(!out.ok && out.text().contains("DL3007"), "{}", out.text());
}

/// `.dockerignore`'s patterns, as `docker build` applies them to the build
/// context (Go's `filepath.Match` per pattern, `**` for any depth; a
/// directory that matches takes everything below it).
struct DockerIgnore(Vec<glob::Pattern>);

impl DockerIgnore {
    fn parse(text: &str) -> Self {
        let patterns = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| {
                assert!(
                    !l.starts_with('!'),
                    "the replay does not implement .dockerignore exceptions ({l})"
                );
                let l = l.trim_start_matches('/').trim_end_matches('/');
                glob::Pattern::new(l).unwrap_or_else(|e| panic!("{l}: {e}"))
            })
            .collect();
        Self(patterns)
    }

    /// Whether `rel` (relative to the context, `/`-separated) is left out.
    fn ignores(&self, rel: &str) -> bool {
        let options = glob::MatchOptions {
            require_literal_separator: true,
            ..Default::default()
        };
        let mut prefix = String::new();
        rel.split('/').any(|part| {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            self.0.iter().any(|p| p.matches_with(&prefix, options))
        })
    }
}

/// Replays the Dockerfile's build stage in `scratch` (standing for its
/// WORKDIR): each `COPY` from the build context (with `.dockerignore`
/// applied), then each `RUN` that calls cargo, command by command, with
/// `cargo build` turned into `cargo fetch --locked` (which reads every
/// target the manifest declares, as a build does, and compiles nothing) and
/// the commands that use the build's output (`target/`) left out.
fn replay_build_stage(dockerfile: &str, dockerignore: &str, scratch: &Path) -> Outcome {
    let (_, stages) = parser::parse(dockerfile).unwrap();
    let build = stages
        .iter()
        .find(|s| s.name.as_deref() == Some("build"))
        .expect("a stage named build");
    let ignore = DockerIgnore::parse(dockerignore);
    let context = root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut copies = build.copies.iter();
    for (keyword, args) in &build.instructions {
        match keyword.as_str() {
            "COPY" => {
                let (from, sources, dest) = copies.next().unwrap();
                assert!(from.is_none(), "the build stage copies from the context");
                let dest = scratch.join(dest.trim_start_matches("./"));
                for source in sources {
                    let path = context.join(source);
                    if ignore.ignores(source) || !path.exists() {
                        return Outcome {
                            ok: false,
                            stdout: String::new(),
                            stderr: format!("COPY {source}: not in the build context"),
                        };
                    }
                    if path.is_dir() {
                        copy_dir(&path, &dest, &|p| {
                            let rel = p.strip_prefix(&context).unwrap();
                            !ignore.ignores(&rel.to_string_lossy())
                        });
                    } else {
                        std::fs::create_dir_all(&dest).unwrap();
                        std::fs::copy(&path, dest.join(path.file_name().unwrap())).unwrap();
                    }
                }
            }
            "RUN" if args.contains("cargo ") => {
                // The shell form, as the parser gives it: `/bin/sh -c …`.
                let shell = args.strip_prefix("/bin/sh -c ").unwrap_or(args);
                let script: Vec<String> = shell
                    .split("&&")
                    .map(str::trim)
                    .filter(|c| !c.contains("target/"))
                    .map(|c| match c.strip_prefix("cargo build") {
                        Some(rest) => {
                            assert!(rest.contains("--locked"), "{c}: builds with --locked");
                            format!("'{cargo}' fetch --locked")
                        }
                        None => c.to_owned(),
                    })
                    .collect();
                let out = outcome(
                    Command::new("sh")
                        .arg("-c")
                        .arg(script.join(" && "))
                        .current_dir(scratch),
                );
                if !out.ok {
                    return out;
                }
            }
            _ => {}
        }
    }
    Outcome {
        ok: true,
        stdout: String::new(),
        stderr: String::new(),
    }
}

#[test]
fn the_build_stage_replayed_in_the_build_context_reads_the_whole_manifest() {
    let scratch = tempfile::tempdir().unwrap();
    let out = replay_build_stage(&read("Dockerfile"), &read(".dockerignore"), scratch.path());
    assert!(out.ok, "{}", out.text());
    assert!(scratch.path().join("benches/pipeline.rs").exists());
    assert!(scratch.path().join("config/default.yaml").exists());
    assert!(!scratch.path().join("tests").exists());

    // The replay fails as `docker build` did before the fix: a target the
    // manifest declares but the context leaves out.
    let scratch = tempfile::tempdir().unwrap();
    let ignore = format!("{}\nbenches/\n", read(".dockerignore"));
    let out = replay_build_stage(&read("Dockerfile"), &ignore, scratch.path());
    assert!(!out.ok, "the replay passed without benches/");
    assert!(out.text().contains("benches"), "{}", out.text());
    let scratch = tempfile::tempdir().unwrap();
    let dockerfile = read("Dockerfile").replace("COPY benches ./benches\n", "");
    let out = replay_build_stage(&dockerfile, &read(".dockerignore"), scratch.path());
    assert!(!out.ok && out.text().contains("pipeline"), "{}", out.text());
}

#[test]
fn dockerignore_patterns_match_as_docker_applies_them() {
    let ignore = DockerIgnore::parse("target/\n**/*.profraw\n*.md\n# c\n");
    assert!(ignore.ignores("target"));
    assert!(ignore.ignores("target/debug/x"));
    assert!(ignore.ignores("src/a/b.profraw"));
    assert!(ignore.ignores("README.md"));
    assert!(!ignore.ignores("src/README.md"), "* stops at /");
    assert!(!ignore.ignores("src/main.rs"));
}
