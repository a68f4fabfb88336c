#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn tokens(file_text: &str, scopes: Vec<Scope>) -> (tempfile::TempDir, AuthConfig) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens");
    std::fs::write(&path, file_text).unwrap();
    let config = AuthConfig {
        tokens: vec![TokenConfig {
            name: "agents".into(),
            file: Some(path),
            env: None,
            scopes,
        }],
        reload_interval_secs: 30,
    };
    (dir, config)
}

#[test]
fn bearer_tokens_with_scopes() {
    let (_dir, config) = tokens(
        "# rotated on 2026-11-01\nold-token\n\n  new-token  \n",
        vec![Scope::Ingest],
    );
    let t = Tokens::load(&config).unwrap();
    assert_eq!(t.check(Some(b"Bearer old-token"), Scope::Ingest), Ok(()));
    assert_eq!(t.check(Some(b"bearer new-token"), Scope::Ingest), Ok(()));
    assert_eq!(
        t.check(Some(b"Bearer new-token"), Scope::Read),
        Err(Failure::Forbidden)
    );
    assert_eq!(
        t.check(Some(b"Bearer other"), Scope::Ingest),
        Err(Failure::Invalid)
    );
    assert_eq!(
        t.check(Some(b"Bearer # rotated"), Scope::Ingest),
        Err(Failure::Invalid)
    );
    assert_eq!(
        t.check(Some(b"Basic b2xkLXRva2Vu"), Scope::Ingest),
        Err(Failure::Malformed)
    );
    assert_eq!(
        t.check(Some(b"Bearer "), Scope::Ingest),
        Err(Failure::Malformed)
    );
    assert_eq!(
        t.check(Some(b"new-token"), Scope::Ingest),
        Err(Failure::Malformed)
    );
    assert_eq!(t.check(None, Scope::Ingest), Err(Failure::Missing));
}

#[test]
fn reload_revokes_a_removed_token_and_keeps_tokens_on_error() {
    let (dir, config) = tokens("a\nb\n", vec![Scope::Read]);
    let t = Tokens::load(&config).unwrap();
    std::fs::write(dir.path().join("tokens"), "b\n").unwrap();
    t.reload().unwrap();
    assert_eq!(
        t.check(Some(b"Bearer a"), Scope::Read),
        Err(Failure::Invalid)
    );
    assert_eq!(t.check(Some(b"Bearer b"), Scope::Read), Ok(()));
    std::fs::remove_file(dir.path().join("tokens")).unwrap();
    let e = t.reload().unwrap_err().to_string();
    assert!(e.starts_with("auth.tokens[0].file: cannot read"), "{e}");
    assert_eq!(t.check(Some(b"Bearer b"), Scope::Read), Ok(()));
}

#[test]
fn errors_name_the_key_path() {
    let (_dir, mut config) = tokens("a b\n", vec![Scope::Read]);
    let e = Tokens::load(&config).err().unwrap().to_string();
    assert!(
        e.contains("auth.tokens[0]") && e.contains("whitespace"),
        "{e}"
    );
    config.tokens[0].scopes.clear();
    let e = Tokens::load(&config).err().unwrap().to_string();
    assert!(e.contains("`scopes` is empty"), "{e}");
    config.tokens[0].env = Some("TOOLSCORE_TEST_SURELY_UNSET_VARIABLE".into());
    let e = Tokens::load(&config).err().unwrap().to_string();
    assert!(e.contains("exactly one of"), "{e}");
    config.tokens[0].file = None;
    config.tokens[0].scopes = vec![Scope::Read];
    let e = Tokens::load(&config).err().unwrap().to_string();
    assert_eq!(
        e,
        "auth.tokens[0].env: TOOLSCORE_TEST_SURELY_UNSET_VARIABLE is not set or not UTF-8"
    );
}

#[test]
fn failures_are_counted_by_reason() {
    let (_dir, config) = tokens("a\n", vec![Scope::Read]);
    let counters: [Counter; 4] = Default::default();
    let guard = Guard::new(
        Arc::new(Tokens::load(&config).unwrap()),
        "api_http",
        counters.clone(),
    );
    let _ = guard.check(None, Scope::Read);
    let _ = guard.check(Some(b"Bearer a"), Scope::Evaluate);
    let _ = guard.check(Some(b"Bearer a"), Scope::Evaluate);
    let _ = guard.check(Some(b"Bearer a"), Scope::Read);
    assert_eq!(
        counters.iter().map(Counter::get).collect::<Vec<_>>(),
        [1, 0, 0, 2]
    );
}
