#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

#[path = "../../tests/common/pki.rs"]
mod pki;

use pki::Files;

fn server_config(files: &Files, ca: &pki::Ca, client_ca: bool) -> ServerTlsConfig {
    let leaf = ca.server();
    ServerTlsConfig {
        cert_file: files.write("tls.crt", &leaf.cert_pem),
        key_file: files.write("tls.key", &leaf.key_pem),
        client_ca_file: client_ca.then(|| files.write("ca.crt", &ca.pem())),
        min_version: MinVersion::Tls12,
        reload_interval_secs: 30,
        handshake_timeout_ms: 10_000,
    }
}

fn load(config: &ServerTlsConfig) -> Result<ServerTls, TlsError> {
    ServerTls::load("test", config, &[b"h2"], server::TlsMetrics::default())
}

#[test]
fn loads_a_certificate_with_and_without_client_ca() {
    let files = Files::new();
    let ca = pki::Ca::new("test CA");
    load(&server_config(&files, &ca, false)).unwrap();
    load(&server_config(&files, &ca, true)).unwrap();
}

#[test]
fn the_certificates_expiry_is_a_metric() {
    let files = Files::new();
    let ca = pki::Ca::new("test CA");
    let tls = load(&server_config(&files, &ca, false)).unwrap();
    // rcgen's default validity ends on 4096-01-01.
    assert_eq!(tls.metrics.not_after.get(), 67_090_118_400);
}

#[test]
fn errors_name_the_file() {
    let files = Files::new();
    let ca = pki::Ca::new("test CA");
    let mut config = server_config(&files, &ca, false);
    config.cert_file = files.path("missing.crt");
    let e = load(&config).err().unwrap().to_string();
    assert!(e.contains("missing.crt"), "{e}");

    let mut config = server_config(&files, &ca, false);
    config.key_file = files.write("not-a-key", "hello");
    let e = load(&config).err().unwrap().to_string();
    assert!(e.contains("not-a-key") && e.contains("private key"), "{e}");

    let mut config = server_config(&files, &ca, false);
    config.cert_file = files.write("empty.crt", "");
    let e = load(&config).err().unwrap().to_string();
    assert!(
        e.contains("empty.crt") && e.contains("no PEM certificate"),
        "{e}"
    );

    // The key of another certificate.
    let mut config = server_config(&files, &ca, false);
    config.key_file = files.write("other.key", &ca.server().key_pem);
    let e = load(&config).err().unwrap().to_string();
    assert!(e.contains("other.key"), "{e}");
}

#[test]
fn reload_takes_changed_files_and_keeps_the_old_on_bad_ones() {
    let files = Files::new();
    let ca = pki::Ca::new("test CA");
    let config = server_config(&files, &ca, false);
    let tls = load(&config).unwrap();
    assert!(!tls.reload().unwrap(), "unchanged files are not a reload");

    let next = ca.server();
    std::fs::write(&config.cert_file, &next.cert_pem).unwrap();
    std::fs::write(&config.key_file, &next.key_pem).unwrap();
    assert!(tls.reload().unwrap());
    assert_eq!(tls.metrics.reloads.get(), 1);

    // Half-written: a certificate whose key is not there yet.
    std::fs::write(&config.cert_file, ca.server().cert_pem).unwrap();
    assert!(tls.reload().is_err());
    assert_eq!(tls.metrics.reload_failures.get(), 1);
    assert_eq!(tls.metrics.reloads.get(), 1);

    // Deleted (a Secret unmounted): a failure each time it is looked for.
    std::fs::remove_file(&config.key_file).unwrap();
    assert!(tls.reload().is_err());
    assert!(tls.reload().is_err());
    assert_eq!(tls.metrics.reload_failures.get(), 3);
    assert_eq!(tls.metrics.reloads.get(), 1);
}

#[test]
fn client_config_needs_cert_and_key_together() {
    let files = Files::new();
    let ca = pki::Ca::new("test CA");
    let leaf = ca.client("exporter");
    let config = ClientTlsConfig {
        ca_file: Some(files.write("ca.crt", &ca.pem())),
        cert_file: Some(files.write("client.crt", &leaf.cert_pem)),
        ..ClientTlsConfig::default()
    };
    let e = client_config(&config, &[b"h2"]).err().unwrap().to_string();
    assert!(e.contains("client.crt"), "{e}");
    let config = ClientTlsConfig {
        key_file: Some(files.write("client.key", &leaf.key_pem)),
        ..config
    };
    client_config(&config, &[b"h2"]).unwrap();
    client_config(&ClientTlsConfig::default(), &[]).unwrap();
}
