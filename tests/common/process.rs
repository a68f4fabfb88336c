//! `toolscore serve` as a real process (the binary cargo built), for the
//! tests that kill it or run several: start, wait until ready, read the API.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use toolscore::config::Config;
use toolscore::criteria::Binder;

use super::conformance::{self, Case};
use super::live::{case_rule, case_spans, trace_of};
use super::service::{SpanSpec, export, test_config};

pub const WAIT: Duration = Duration::from_secs(20);

/// A running `toolscore serve`; killed (`SIGKILL`) when dropped.
pub struct Serve {
    pub child: Child,
    pub otlp_grpc: SocketAddr,
    pub otlp_http: SocketAddr,
    pub api: SocketAddr,
    pub api_grpc: SocketAddr,
}

impl Serve {
    /// `kill -9`: no drain, no flush.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts `toolscore serve` with `config` (its store as given) on ports the
/// OS picks, its config file and working directory in `dir`; returns once
/// it has bound them (read from its `listening` log line, so no other
/// process can take a port between choosing and binding it). Its log goes
/// on to the test's output.
pub fn serve(config: &Config, dir: &Path) -> Serve {
    let mut config = config.clone();
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    config.receivers.grpc.endpoint = any;
    config.receivers.http.endpoint = any;
    config.api.http.endpoint = any;
    config.api.grpc.endpoint = any;
    config.telemetry.log_format = toolscore::config::LogFormat::Json;
    let n = SERVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = dir.join(format!("config-{}-{n}.yaml", std::process::id()));
    std::fs::write(&file, serde_saphyr::to_string(&config).unwrap()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .args(["serve", "--config"])
        .arg(&file)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            eprintln!("{line}");
            let Ok(json) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            let fields = &json["fields"];
            if fields["message"] == "listening" {
                let at = |k: &str| fields[k].as_str().and_then(|a| a.parse().ok());
                let _ = tx.send((
                    at("otlp_grpc"),
                    at("otlp_http"),
                    at("api_http"),
                    at("api_grpc"),
                ));
            }
        }
    });
    let Ok((Some(otlp_grpc), Some(otlp_http), Some(api), Some(api_grpc))) = rx.recv_timeout(WAIT)
    else {
        let _ = child.kill();
        panic!(
            "toolscore did not start listening (its log is above): {:?}",
            child.wait()
        );
    };
    Serve {
        child,
        otlp_grpc,
        otlp_http,
        api,
        api_grpc,
    }
}

/// Tells apart the config files of the services one test starts.
static SERVED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Waits (polling, with a deadline) until `/readyz` answers 200.
pub async fn ready(http: &reqwest::Client, api: SocketAddr) {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(r) = http.get(format!("http://{api}/readyz")).send().await
            && r.status() == 200
        {
            return;
        }
        assert!(Instant::now() < deadline, "toolscore did not become ready");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

pub async fn body(http: &reqwest::Client, url: String) -> (u16, String) {
    let r = http.get(url).send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// The test config with a rule per conformance case that the live service
/// can run, and those cases.
pub fn conformance_config() -> (Config, Vec<Case>) {
    let mut config = test_config();
    let mut live = Vec::new();
    for case in conformance::load_cases() {
        let (ev, rule) = case_rule(&case);
        let mut single = Config::default();
        single.evaluators.inline.push(ev.clone());
        single.rules.push(rule.clone());
        if single.validate().is_ok() && Binder::load(single.binder(), None).is_ok() {
            config.evaluators.inline.push(ev);
            config.rules.push(rule);
            live.push(case);
        }
    }
    (config, live)
}

/// An OTLP/gRPC exporter (the OpenTelemetry SDK's) to `addr`.
pub fn grpc_exporter(addr: SocketAddr) -> opentelemetry_otlp::SpanExporter {
    use opentelemetry_otlp::WithExportConfig;
    opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(format!("http://{addr}"))
        .with_timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// Sends the cases' spans to `addr` over OTLP/gRPC, 25 traces a request.
pub async fn send_cases(addr: SocketAddr, cases: &[&Case]) {
    let exporter = grpc_exporter(addr);
    for chunk in cases.chunks(25) {
        let spans: Vec<SpanSpec> = chunk.iter().flat_map(|c| case_spans(c)).collect();
        export(&exporter, &spans).await;
    }
}

/// A case's scores (waiting for them) and trace summary, as the API's bytes.
pub async fn read_case(http: &reqwest::Client, api: SocketAddr, case: &Case) -> (String, String) {
    let id = trace_of(case).to_hex();
    let (status, scores) = body(
        http,
        format!("http://{api}/traces/{id}/scores?wait_ms=15000"),
    )
    .await;
    assert_eq!(status, 200, "{}: {scores}", case.id);
    assert!(
        scores.contains("\"status\":\"evaluated\""),
        "{}: {scores}",
        case.id
    );
    let (_, trace) = body(http, format!("http://{api}/traces/{id}")).await;
    (scores, trace)
}

/// Every conformance case through live OTLP into `toolscore serve` with
/// `config`'s store; each result read once reported (`wait_ms`); then
/// `kill -9`, a new process on the same store, and every result, trace
/// summary and the list read again: the same bytes. How many results.
pub async fn results_survive_kill_9(config: &Config, dir: &Path) -> usize {
    let (mut full, live) = conformance_config();
    full.store = config.store.clone();
    let live: Vec<&Case> = live.iter().collect();
    let http = super::http();
    let mut first = serve(&full, dir);
    ready(&http, first.api).await;
    send_cases(first.otlp_grpc, &live).await;
    let mut before = Vec::new();
    for case in &live {
        before.push((case, read_case(&http, first.api, case).await));
    }
    let list_url = |api: SocketAddr| format!("http://{api}/traces?limit=10000");
    let (_, list_before) = body(&http, list_url(first.api)).await;
    first.kill();

    let second = serve(&full, dir);
    ready(&http, second.api).await;
    for (case, (scores, trace)) in &before {
        let id = trace_of(case).to_hex();
        let (status, again) =
            body(&http, format!("http://{}/traces/{id}/scores", second.api)).await;
        assert_eq!(status, 200, "{id}");
        assert_eq!(&again, scores, "{id}: scores differ after the restart");
        let (_, again) = body(&http, format!("http://{}/traces/{id}", second.api)).await;
        assert_eq!(
            &again, trace,
            "{id}: trace summary differs after the restart"
        );
    }
    let (_, list_after) = body(&http, list_url(second.api)).await;
    assert_eq!(
        list_after, list_before,
        "GET /traces differs after the restart"
    );
    before.len()
}
