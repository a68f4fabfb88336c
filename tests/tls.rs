//! TLS and bearer tokens on the listeners, with real clients: the
//! OpenTelemetry Python SDK's exporters, curl, and tonic with and without a
//! client certificate. Certificates are made by the test (rcgen).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use toolscore::listener::Listener;

use common::pki::{Ca, Files, Leaf};
use common::service::{self, test_config};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};
use toolscore::api::grpc::pb;
use toolscore::api::grpc::pb::scores_service_client::ScoresServiceClient;
use toolscore::auth::{AuthConfig, Scope, TokenConfig};
use toolscore::config::Config;
use toolscore::telemetry::{AuthFailureLabel, ListenerLabel};
use toolscore::tls::ServerTlsConfig;

/// `tls:` for a listener serving `leaf`, re-read every second.
fn server_tls(files: &Files, leaf: &Leaf, client_ca: Option<&Ca>) -> ServerTlsConfig {
    ServerTlsConfig {
        cert_file: files.write("tls.crt", &leaf.cert_pem),
        key_file: files.write("tls.key", &leaf.key_pem),
        client_ca_file: client_ca.map(|ca| files.write("client-ca.crt", &ca.pem())),
        min_version: toolscore::tls::MinVersion::Tls12,
        reload_interval_secs: 1,
        handshake_timeout_ms: 2_000,
    }
}

/// Every listener on TLS with `leaf`, and every listener requiring tokens:
/// `ingest-token` (ingest), `reader-token` (read) from files.
fn secured(files: &Files, leaf: &Leaf) -> Config {
    let mut config = test_config();
    let tls = server_tls(files, leaf, None);
    config.receivers.grpc.tls = Some(tls.clone());
    config.receivers.http.tls = Some(tls.clone());
    config.api.http.tls = Some(tls.clone());
    config.api.grpc.tls = Some(tls);
    config.receivers.grpc.auth.enabled = true;
    config.receivers.http.auth.enabled = true;
    config.api.http.auth.enabled = true;
    config.api.grpc.auth.enabled = true;
    config.auth = AuthConfig {
        tokens: vec![
            TokenConfig {
                name: "agents".into(),
                file: Some(files.write("ingest-tokens", "ingest-token\n")),
                env: None,
                scopes: vec![Scope::Ingest],
            },
            TokenConfig {
                name: "dashboards".into(),
                file: Some(files.write("read-tokens", "# rotated monthly\nreader-token\n")),
                env: None,
                scopes: vec![Scope::Read],
            },
        ],
        reload_interval_secs: 1,
    };
    config.evaluators.inline.push(service::count_evaluator(
        serde_json::json!({"get_weather": ["=", 1]}),
    ));
    config
}

/// curl, as a user runs it: `(HTTP status, body)`, or `Err(exit code)` when
/// no HTTP answer came.
fn curl(args: &[&str]) -> Result<(u16, String), i32> {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "10", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("curl runs");
    if !out.status.success() {
        return Err(out.status.code().unwrap_or(-1));
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap();
    Ok((status.parse().unwrap(), body.to_owned()))
}

fn curl_tls(
    ca: &Path,
    token: Option<&str>,
    url: &str,
    extra: &[&str],
) -> Result<(u16, String), i32> {
    let auth = token.map(|t| format!("Authorization: Bearer {t}"));
    let mut args = vec!["--cacert", ca.to_str().unwrap()];
    if let Some(h) = &auth {
        args.extend(["-H", h.as_str()]);
    }
    args.extend_from_slice(extra);
    args.push(url);
    curl(&args)
}

/// A TLS channel trusting `ca`, with a client certificate if given.
async fn channel(
    addr: std::net::SocketAddr,
    ca: &Ca,
    client: Option<&Leaf>,
) -> Result<Channel, tonic::transport::Error> {
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(ca.pem()))
        .domain_name("localhost");
    if let Some(leaf) = client {
        tls = tls.identity(Identity::from_pem(&leaf.cert_pem, &leaf.key_pem));
    }
    Channel::from_shared(format!("https://localhost:{}", addr.port()))
        .unwrap()
        .tls_config(tls)?
        .connect()
        .await
}

fn with_token<T>(message: T, token: &str) -> tonic::Request<T> {
    let mut req = tonic::Request::new(message);
    req.metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    req
}

/// How long a refused handshake may take to be counted after the client
/// saw it fail.
const WAIT_COUNTED: Duration = Duration::from_secs(10);

/// Polls `done` every 20 ms until it holds, failing at the deadline.
async fn eventually(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tick.tick().await;
    }
}

/// The Python SDK's venv (.ci/python-otel/install.sh). Missing: the test
/// fails under CI=true, else it is skipped with a message.
fn python() -> Option<PathBuf> {
    let path = std::env::var_os("TOOLSCORE_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tmp/python-otel/bin/python")
        });
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the OpenTelemetry Python SDK is missing at {}: run .ci/python-otel/install.sh",
        path.display()
    );
    println!(
        "skipped: no OpenTelemetry Python SDK at {} (.ci/python-otel/install.sh)",
        path.display()
    );
    None
}

fn python_export(
    python: &Path,
    protocol: &str,
    endpoint: &str,
    ca: &Path,
    token: &str,
) -> (bool, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/export_tls.py");
    let out = Command::new(python)
        // requests lets these override the exporter's own CA file.
        .env_remove("REQUESTS_CA_BUNDLE")
        .env_remove("CURL_CA_BUNDLE")
        .arg(script)
        .args([protocol, endpoint, ca.to_str().unwrap(), token])
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    println!(
        "{protocol}: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), stdout)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_exports_over_tls_with_a_token_and_curl_reads_the_scores() {
    let Some(python) = python() else { return };
    let files = Files::new();
    let ca = Ca::new("toolscore test CA");
    let ca_file = files.write("ca.crt", &ca.pem());
    let running = service::start(secured(&files, &ca.server())).await;
    let grpc = format!(
        "https://localhost:{}",
        running.addr(Listener::OtlpGrpc).unwrap().port()
    );
    let http = format!(
        "https://localhost:{}",
        running.addr(Listener::OtlpHttp).unwrap().port()
    );
    let api = format!(
        "https://localhost:{}",
        running.addr(Listener::ApiHttp).unwrap().port()
    );

    for (protocol, endpoint) in [("grpc", &grpc), ("http", &http)] {
        let (ok, trace_id) = tokio::task::spawn_blocking({
            let (python, endpoint, ca_file) = (python.clone(), endpoint.clone(), ca_file.clone());
            move || python_export(&python, protocol, &endpoint, &ca_file, "ingest-token")
        })
        .await
        .unwrap();
        assert!(ok, "the {protocol} exporter reported failure");
        // curl with the CA and a read token, long-polling for the result.
        let url = format!("{api}/traces/{trace_id}/scores?wait_ms=10000");
        let (status, body) = curl_tls(&ca_file, Some("reader-token"), &url, &[]).unwrap();
        assert_eq!(status, 200, "{body}");
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["status"], "evaluated", "{body}");
        assert_eq!(body["root"]["service"], "python-agent");
        assert_eq!(body["scores"][0]["score"], 1.0, "{body}");

        // A read token cannot export: the SDK reports failure at once.
        let (ok, _) = tokio::task::spawn_blocking({
            let (python, endpoint, ca_file) = (python.clone(), endpoint.clone(), ca_file.clone());
            move || python_export(&python, protocol, &endpoint, &ca_file, "reader-token")
        })
        .await
        .unwrap();
        assert!(!ok, "{protocol}: a token without the ingest scope exported");
    }
    let forbidden = |listener| {
        running
            .metrics
            .auth_failures
            .get_or_create(&AuthFailureLabel {
                listener,
                reason: "forbidden",
            })
            .get()
    };
    assert!(forbidden("otlp_grpc") >= 1);
    assert!(forbidden("otlp_http") >= 1);
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_missing_and_revoked_tokens_are_refused_with_401_and_unauthenticated() {
    let files = Files::new();
    let ca = Ca::new("toolscore test CA");
    let ca_file = files.write("ca.crt", &ca.pem());
    let running = service::start(secured(&files, &ca.server())).await;
    let api = format!(
        "https://localhost:{}",
        running.addr(Listener::ApiHttp).unwrap().port()
    );
    let unknown = format!("{api}/traces/0123456789abcdef0123456789abcdef/scores");

    // The HTTP API: 401 with the API's error shape and a challenge.
    for token in [None, Some("wrong-token"), Some("ingest-token ")] {
        let (status, body) = curl_tls(&ca_file, token, &unknown, &["-i"]).unwrap();
        let expected = if token == Some("ingest-token ") {
            403
        } else {
            401
        };
        assert_eq!(status, expected, "{token:?}: {body}");
        if expected == 401 {
            assert!(
                body.to_ascii_lowercase()
                    .contains("www-authenticate: bearer"),
                "{body}"
            );
            assert!(
                body.contains(
                    r#"{"error":{"code":"unauthenticated","message":"authentication required"}}"#
                ),
                "{body}"
            );
        } else {
            assert!(body.contains(r#""code":"permission_denied""#), "{body}");
        }
    }
    let (status, _) = curl_tls(&ca_file, Some("reader-token"), &unknown, &[]).unwrap();
    assert_eq!(status, 404, "a read token reads");
    // Probes and (by default) /metrics need no token; /v1/evaluate needs `evaluate`.
    for path in ["/healthz", "/readyz", "/metrics"] {
        let (status, _) = curl_tls(&ca_file, None, &format!("{api}{path}"), &[]).unwrap();
        assert_eq!(status, 200, "{path}");
    }
    let (status, _) = curl_tls(
        &ca_file,
        Some("reader-token"),
        &format!("{api}/v1/evaluate"),
        &[
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "-d",
            "{}",
        ],
    )
    .unwrap();
    assert_eq!(status, 403);

    // OTLP/HTTP: 401 with a google.rpc.Status in the request's encoding.
    let otlp = format!(
        "https://localhost:{}/v1/traces",
        running.addr(Listener::OtlpHttp).unwrap().port()
    );
    let json = [
        "-X",
        "POST",
        "-H",
        "Content-Type: application/json",
        "-d",
        "{}",
    ];
    let (status, body) = curl_tls(&ca_file, Some("wrong-token"), &otlp, &json).unwrap();
    assert_eq!(
        (status, body.as_str()),
        (401, r#"{"code":16,"message":"authentication required"}"#)
    );
    let (status, _) = curl_tls(&ca_file, Some("ingest-token"), &otlp, &json).unwrap();
    assert_eq!(status, 200);

    // OTLP/gRPC and the gRPC query API: UNAUTHENTICATED; health is open.
    let grpc = channel(running.addr(Listener::OtlpGrpc).unwrap(), &ca, None)
        .await
        .unwrap();
    let mut receiver = TraceServiceClient::new(grpc.clone());
    let e = receiver
        .export(ExportTraceServiceRequest::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");
    assert_eq!(e.message(), "authentication required");
    receiver
        .export(with_token(
            ExportTraceServiceRequest::default(),
            "ingest-token",
        ))
        .await
        .unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(grpc);
    health
        .check(tonic_health::pb::HealthCheckRequest::default())
        .await
        .unwrap();
    let query = channel(running.addr(Listener::ApiGrpc).unwrap(), &ca, None)
        .await
        .unwrap();
    let mut scores = ScoresServiceClient::new(query);
    let get = unknown_trace();
    let e = scores
        .get_scores(with_token(get.clone(), "wrong-token"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unauthenticated);
    let e = scores
        .get_scores(with_token(get.clone(), "ingest-token"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    let e = scores
        .get_scores(with_token(get.clone(), "reader-token"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound, "a read token reads");

    // Revoked: the token file rewritten without it, read again within a second.
    files.write("read-tokens", "new-reader-token\n");
    eventually(
        "the revoked token to be refused",
        Duration::from_secs(10),
        || {
            curl_tls(&ca_file, Some("reader-token"), &unknown, &[])
                .unwrap()
                .0
                == 401
        },
    )
    .await;
    let (status, _) = curl_tls(&ca_file, Some("new-reader-token"), &unknown, &[]).unwrap();
    assert_eq!(status, 404);
    let e = scores
        .get_scores(with_token(get, "reader-token"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unauthenticated);

    let failures = |listener, reason| {
        running
            .metrics
            .auth_failures
            .get_or_create(&AuthFailureLabel { listener, reason })
            .get()
    };
    assert_eq!(failures("api_http", "missing"), 1);
    assert!(failures("api_http", "invalid") >= 2);
    assert_eq!(failures("otlp_grpc", "missing"), 1);
    assert_eq!(failures("api_grpc", "forbidden"), 1);
    running.stop().await.unwrap();
}

/// A `GetScores` call for a trace no one sent: `NOT_FOUND` means the call
/// went through.
fn unknown_trace() -> pb::GetScoresRequest {
    pb::GetScoresRequest {
        trace_id: "0123456789abcdef0123456789abcdef".into(),
    }
}

/// Whether a new connection trusting `ca` (with a client certificate, if
/// given) gets a call through to the gRPC query API at `addr`.
async fn gets_through(addr: std::net::SocketAddr, ca: &Ca, client: Option<&Leaf>) -> bool {
    match channel(addr, ca, client).await {
        Err(_) => false,
        Ok(c) => ScoresServiceClient::new(c)
            .get_scores(unknown_trace())
            .await
            .is_err_and(|e| e.code() == tonic::Code::NotFound),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_admits_a_client_certificate_and_refuses_a_client_without_one() {
    let files = Files::new();
    let ca = Ca::new("toolscore test CA");
    let clients = Ca::new("toolscore clients CA");
    let mut config = test_config();
    config.api.grpc.tls = Some(server_tls(&files, &ca.server(), Some(&clients)));
    let running = service::start(config).await;
    let addr = running.addr(Listener::ApiGrpc).unwrap();

    assert!(gets_through(addr, &ca, Some(&clients.client("agent"))).await);
    // Without a certificate, or with one from another CA, no call succeeds.
    assert!(!gets_through(addr, &ca, None).await);
    assert!(!gets_through(addr, &ca, Some(&ca.client("stranger"))).await);
    // The server counts a failed handshake when its side of it ends, which
    // may be after the client has given up.
    let failed = || {
        running
            .metrics
            .tls_handshake_failures
            .get_or_create(&ListenerLabel {
                listener: "api_grpc",
            })
            .get()
    };
    eventually("two handshake failures counted", WAIT_COUNTED, || {
        failed() >= 2
    })
    .await;
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plaintext_client_on_a_tls_port_fails_cleanly_and_tls_clients_go_on() {
    let files = Files::new();
    let ca = Ca::new("toolscore test CA");
    let ca_file = files.write("ca.crt", &ca.pem());
    let mut config = test_config();
    let tls = server_tls(&files, &ca.server(), None);
    config.api.http.tls = Some(tls.clone());
    config.receivers.grpc.tls = Some(tls);
    let running = service::start(config).await;
    let api = running.addr(Listener::ApiHttp).unwrap();

    // curl speaking HTTP to the TLS port gets no HTTP answer: a TLS alert
    // (curl: "HTTP/0.9 not allowed"), or the connection closed.
    let plain = curl(&[&format!("http://127.0.0.1:{}/healthz", api.port())]);
    assert!(matches!(plain, Err(1 | 52 | 56)), "{plain:?}");
    // A plaintext gRPC client fails with an error, not a hang.
    let e = tokio::time::timeout(
        Duration::from_secs(10),
        TraceServiceClient::connect(format!(
            "http://{}",
            running.addr(Listener::OtlpGrpc).unwrap()
        )),
    )
    .await
    .expect("a plaintext gRPC client is answered quickly");
    let refused = match e {
        Err(_) => true,
        Ok(mut c) => c
            .export(ExportTraceServiceRequest::default())
            .await
            .is_err(),
    };
    assert!(refused);

    let (status, body) = curl_tls(
        &ca_file,
        None,
        &format!("https://localhost:{}/healthz", api.port()),
        &[],
    )
    .unwrap();
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ok"}"#));
    // `toolscore probe` (the chart's `helm test`) over TLS: with the CA
    // file it passes; the system's roots do not know this CA.
    let url = format!("https://localhost:{}/readyz", api.port());
    for (ca, code) in [(Some(&ca_file), 0), (None, 1)] {
        let mut probe = Command::new(env!("CARGO_BIN_EXE_toolscore"));
        probe.arg("probe");
        if let Some(ca) = ca {
            probe.arg("--ca-file").arg(ca);
        }
        probe.arg(&url);
        let out = tokio::task::spawn_blocking(move || probe.output().unwrap());
        let out = out.await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{stderr}");
    }
    for listener in ["api_http", "otlp_grpc"] {
        let failed = || {
            running
                .metrics
                .tls_handshake_failures
                .get_or_create(&ListenerLabel { listener })
                .get()
        };
        eventually(listener, WAIT_COUNTED, || failed() >= 1).await;
    }
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_rotated_on_disk_is_served_to_new_connections_while_old_ones_continue() {
    let files = Files::new();
    let old_ca = Ca::new("toolscore old CA");
    let new_ca = Ca::new("toolscore new CA");
    let mut config = test_config();
    config.api.grpc.tls = Some(server_tls(&files, &old_ca.server(), None));
    let running = service::start(config).await;
    let addr = running.addr(Listener::ApiGrpc).unwrap();
    let mut open = ScoresServiceClient::new(channel(addr, &old_ca, None).await.unwrap());
    let code = open.get_scores(unknown_trace()).await.unwrap_err().code();
    assert_eq!(code, tonic::Code::NotFound);

    // cert-manager writes the renewed certificate (here from another CA, so
    // the two are told apart by who trusts them).
    let renewed = new_ca.server();
    files.write("tls.key", &renewed.key_pem);
    files.write("tls.crt", &renewed.cert_pem);
    let label = ListenerLabel {
        listener: "api_grpc",
    };
    let reloads = || running.metrics.tls_reloads.get_or_create(&label).get();
    eventually(
        "the certificate to be reloaded",
        Duration::from_secs(10),
        || reloads() >= 1,
    )
    .await;

    // The open connection goes on; new ones get the new certificate.
    let code = open.get_scores(unknown_trace()).await.unwrap_err().code();
    assert_eq!(code, tonic::Code::NotFound);
    assert!(gets_through(addr, &new_ca, None).await);
    assert!(
        !gets_through(addr, &old_ca, None).await,
        "a new connection still got the old certificate"
    );
    running.stop().await.unwrap();
}

/// `toolscore validate-config` on `config`: exit code and stderr.
fn validate_config(files: &Files, config: &Config) -> (Option<i32>, String) {
    let yaml = files.write("config.yaml", &serde_saphyr::to_string(config).unwrap());
    let out = Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .args(["validate-config", yaml.to_str().unwrap()])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn validate_config_names_a_missing_certificate_and_token_file() {
    let files = Files::new();
    let ca = Ca::new("toolscore test CA");
    let mut config = secured(&files, &ca.server());
    config.api.grpc.tls.as_mut().unwrap().cert_file = files.path("missing.crt");
    let (code, stderr) = validate_config(&files, &config);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("api.grpc.tls: cannot read") && stderr.contains("missing.crt"),
        "{stderr}"
    );

    let mut config = secured(&files, &ca.server());
    config.auth.tokens[1].file = Some(files.path("no-tokens"));
    let (code, stderr) = validate_config(&files, &config);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("auth.tokens[1].file: cannot read") && stderr.contains("no-tokens"),
        "{stderr}"
    );

    // The outgoing connections' TLS files too, when they use TLS.
    let mut config = secured(&files, &ca.server());
    config.store.backend = toolscore::config::StoreBackend::Postgres;
    config.store.postgres.url = "postgres://toolscore@db.internal/toolscore?sslmode=require".into();
    config.store.postgres.tls.ca_file = Some(files.path("db-ca.crt"));
    let (code, stderr) = validate_config(&files, &config);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("store.postgres.tls.ca_file"), "{stderr}");
    config.store.postgres.tls.ca_file = Some(files.write("db-ca.crt", &ca.pem()));
    let (code, stderr) = validate_config(&files, &config);
    assert_eq!(code, Some(0), "{stderr}");
    // TLS keys for a connection that would not use them are refused.
    config.store.postgres.url = "postgres://toolscore@db.internal/toolscore".into();
    let (code, stderr) = validate_config(&files, &config);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("store.postgres.tls") && stderr.contains("plaintext"),
        "{stderr}"
    );
}
