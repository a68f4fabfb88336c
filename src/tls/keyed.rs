//! The checks and errors of a `tls:` key of an outgoing connection, shared
//! by the exporter (`exporter.tls`), self-telemetry (`telemetry.otlp.tls`)
//! and PostgreSQL (`store.postgres.tls`): each reports the key path of what
//! is wrong, as config validation does.

use crate::key_error::KeyError;
use std::sync::Arc;

use super::{ClientTlsConfig, TlsError, client_config};

/// Static checks (no file is read). `prefix`: the key path of the `tls`
/// section; `https`: whether its connection uses TLS (an `https://`
/// endpoint, `sslmode=require`).
pub fn validate(prefix: &str, https: bool, tls: &ClientTlsConfig) -> Result<(), KeyError> {
    if !https {
        if *tls != ClientTlsConfig::default() {
            return Err(KeyError::new(
                prefix.into(),
                "is set but the connection is plaintext: use an https:// endpoint (sslmode=require in a PostgreSQL URL) to connect with TLS"
                    .into(),
            ));
        }
        return Ok(());
    }
    match (&tls.cert_file, &tls.key_file) {
        (Some(_), None) => {
            return Err(KeyError::new(
                format!("{prefix}.key_file"),
                format!("must be set with {prefix}.cert_file"),
            ));
        }
        (None, Some(_)) => {
            return Err(KeyError::new(
                format!("{prefix}.cert_file"),
                format!("must be set with {prefix}.key_file"),
            ));
        }
        _ => {}
    }
    if tls.insecure_skip_verify && tls.ca_file.is_some() {
        return Err(KeyError::new(
            format!("{prefix}.insecure_skip_verify"),
            format!("verifies nothing, so {prefix}.ca_file would be ignored; set only one"),
        ));
    }
    Ok(())
}

/// Reads the files and builds the client configuration; an error names the
/// key of the file at fault (`{prefix}.ca_file`, …), or `prefix` itself
/// when no one file is.
pub fn build(
    prefix: &str,
    tls: &ClientTlsConfig,
    alpn: &[&[u8]],
) -> Result<Arc<rustls::ClientConfig>, KeyError> {
    client_config(tls, alpn).map_err(|e| KeyError::new(key_of(prefix, tls, &e), e.to_string()))
}

fn key_of(prefix: &str, tls: &ClientTlsConfig, e: &TlsError) -> String {
    let path = match e {
        TlsError::Read { path, .. } | TlsError::Pem { path, .. } => path,
        TlsError::Rustls(_) | TlsError::Verifier(_) => return prefix.to_owned(),
    };
    [
        ("ca_file", &tls.ca_file),
        ("cert_file", &tls.cert_file),
        ("key_file", &tls.key_file),
    ]
    .into_iter()
    .find(|(_, file)| file.as_ref() == Some(path))
    .map_or_else(|| prefix.to_owned(), |(key, _)| format!("{prefix}.{key}"))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn files(ca: Option<&str>, cert: Option<&str>, key: Option<&str>) -> ClientTlsConfig {
        ClientTlsConfig {
            ca_file: ca.map(PathBuf::from),
            cert_file: cert.map(PathBuf::from),
            key_file: key.map(PathBuf::from),
            ..ClientTlsConfig::default()
        }
    }

    #[test]
    fn any_key_on_plaintext_is_refused() {
        let on_http = |tls: ClientTlsConfig| validate("x.tls", false, &tls);
        assert_eq!(on_http(ClientTlsConfig::default()), Ok(()));
        let skip = ClientTlsConfig {
            insecure_skip_verify: true,
            ..ClientTlsConfig::default()
        };
        assert_eq!(on_http(skip).unwrap_err().key, "x.tls");
        assert_eq!(
            on_http(files(Some("ca.pem"), None, None)).unwrap_err().key,
            "x.tls"
        );
    }

    #[test]
    fn contradictions_name_their_key() {
        let on_https = |tls: ClientTlsConfig| validate("x.tls", true, &tls).map_err(|e| e.key);
        assert_eq!(on_https(ClientTlsConfig::default()), Ok(()));
        assert_eq!(
            on_https(files(Some("ca.pem"), Some("c"), Some("k"))),
            Ok(())
        );
        assert_eq!(
            on_https(files(None, Some("c"), None)),
            Err("x.tls.key_file".into())
        );
        assert_eq!(
            on_https(files(None, None, Some("k"))),
            Err("x.tls.cert_file".into())
        );
        let skip_and_ca = ClientTlsConfig {
            insecure_skip_verify: true,
            ..files(Some("ca.pem"), None, None)
        };
        assert_eq!(
            on_https(skip_and_ca),
            Err("x.tls.insecure_skip_verify".into())
        );
    }

    #[test]
    fn a_file_that_cannot_be_used_is_named_by_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate").unwrap();
        let s = |p: &std::path::Path| p.to_str().unwrap().to_owned();

        let KeyError { key, message } =
            build("x.tls", &files(Some(&s(&missing)), None, None), &[]).unwrap_err();
        assert_eq!(key, "x.tls.ca_file");
        assert!(message.contains("missing.pem"), "{message}");
        let KeyError { key, .. } =
            build("x.tls", &files(Some(&s(&junk)), None, None), &[]).unwrap_err();
        assert_eq!(key, "x.tls.ca_file");
        let KeyError { key, .. } = build(
            "x.tls",
            &files(None, Some(&s(&junk)), Some(&s(&missing))),
            &[],
        )
        .unwrap_err();
        assert_eq!(key, "x.tls.cert_file");
        assert!(build("x.tls", &ClientTlsConfig::default(), &[b"h2"]).is_ok());
    }
}
