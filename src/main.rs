//! The `toolscore` binary: parses arguments and starts the requested command.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use toolscore::cli::{self, eval::EvalArgs};
use toolscore::listener::Listener;

/// jemalloc rather than glibc malloc: the pipeline allocates and frees many
/// small objects per span on several threads, where glibc malloc (and
/// mimalloc's huge-page arenas, zeroing fresh pages) cost much of the CPU;
/// the A/B is in perf/README.md.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "toolscore",
    version,
    about = "Scores how AI agents use their tools, from their OpenTelemetry traces"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the service: OTLP receivers, trace assembly, live evaluation.
    Serve {
        /// The configuration file [default: the embedded config/default.yaml].
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Check a configuration file (and the evaluator and eval-set files it
    /// names) without starting; exit 2 with the file and key path on error.
    ValidateConfig {
        #[arg(
            value_name = "FILE",
            required_unless_present = "config",
            conflicts_with = "config"
        )]
        file: Option<PathBuf>,
        /// The file, given as `serve` takes it (`--config FILE`, as
        /// `otelcol validate --config=FILE`).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Evaluate OTLP JSON trace files against a UiPath eval set (offline, for CI).
    ///
    /// Exit status: 0 when every evaluation ran and passed; 1 when any errored,
    /// fell below --min-score or failed its threshold; 2 for usage or
    /// configuration errors.
    Eval {
        /// The UiPath eval-set file (version "1.0").
        #[arg(long, value_name = "FILE")]
        eval_set: PathBuf,
        /// The folder of evaluator files [default: <eval-set dir>/../evaluators].
        #[arg(long, value_name = "DIR")]
        evaluators: Option<PathBuf>,
        /// OTLP JSON trace files: one {"resourceSpans": [...]} object, or one per line.
        #[arg(long, value_name = "FILE", num_args = 1.., required = true)]
        traces: Vec<PathBuf>,
        /// Write the results JSON here instead of standard output.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Fail (exit 1) when any score is below this.
        #[arg(long, value_name = "X")]
        min_score: Option<f64>,
        /// Span attribute naming the eval-set item (repeatable)
        /// [default: eval.case.id, eval_item_id, evalId].
        #[arg(long = "binding-attribute", value_name = "KEY")]
        binding_attributes: Vec<String>,
        /// A toolscore config file whose `llm` providers the LLM-judged
        /// evaluators call (and whose `extract` settings apply). Without
        /// one, providers come from OPENAI_API_KEY [OPENAI_BASE_URL] and
        /// UIPATH_URL + UIPATH_ACCESS_TOKEN, as the reference libraries read them.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Send a sample agent trace to a running `toolscore serve` over OTLP/gRPC
    /// and print its scores (a first run with no agent at hand).
    ///
    /// Exit status: 0 when the scores arrived; 1 when the service could not be
    /// reached or no result came within 10 s; 2 for an endpoint that is not
    /// an http://host:port URL.
    Demo {
        /// The OTLP/gRPC receiver to send the trace to.
        #[arg(long, value_name = "URL", default_value = cli::demo::DEFAULT_OTLP_ENDPOINT)]
        otlp_endpoint: String,
        /// The gRPC query API to watch for the trace's scores.
        #[arg(long, value_name = "URL", default_value = cli::demo::DEFAULT_API_ENDPOINT)]
        api_endpoint: String,
    },
    /// GET an http:// or https:// URL, e.g. http://127.0.0.1:8080/readyz; for checks
    /// from inside the container, which has no shell or curl (the Helm
    /// chart's `helm test` runs it).
    ///
    /// Exit status: 0 for a 2xx answer; 1 for any other answer, or none
    /// within 5 s; 2 for a URL that is neither http:// nor https://, or a CA
    /// file that cannot be used.
    Probe {
        #[arg(value_name = "URL")]
        url: String,
        /// With an https:// URL: the CA (PEM) the server's certificate
        /// chains to (default: the system's roots).
        #[arg(long, value_name = "FILE")]
        ca_file: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    toolscore::tls::install_default_provider();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            // clap uses 0 for --help/--version and 2 for usage errors, as we do.
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    match cli.command {
        Command::Serve { config } => serve(config.as_deref()),
        Command::ValidateConfig { file, config } => match file.or(config) {
            Some(file) => validate(&file),
            // clap requires one of them.
            None => ExitCode::from(2),
        },
        Command::Eval {
            eval_set,
            evaluators,
            traces,
            output,
            min_score,
            binding_attributes,
            config,
        } => cli::eval::run(&EvalArgs {
            eval_set,
            evaluators,
            traces,
            output,
            min_score,
            binding_attributes,
            config,
        })
        .into(),
        Command::Demo {
            otlp_endpoint,
            api_endpoint,
        } => cli::demo::run(&cli::demo::DemoArgs {
            otlp_endpoint,
            api_endpoint,
            timeout: cli::demo::DEFAULT_TIMEOUT,
        })
        .into(),
        Command::Probe { url, ca_file } => {
            cli::probe::run(&url, ca_file.as_deref(), cli::probe::DEFAULT_TIMEOUT).into()
        }
    }
}

fn validate(file: &std::path::Path) -> ExitCode {
    let result = toolscore::app::load_config(Some(file))
        .map_err(anyhow::Error::from)
        .and_then(|(config, base)| {
            let binder = toolscore::criteria::Binder::load(config.binder(), base.as_deref())?;
            config
                .llm
                .check_sample_rates(|id| binder.catalog.is_llm_judge(id))
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            // Certificates, keys, CA bundles and token sources exist and parse.
            toolscore::security::Security::load(&config, &toolscore::telemetry::Metrics::new())?;
            toolscore::security::check_clients(&config)?;
            // The model providers' key and TLS files.
            toolscore::llm::Judges::build(
                &config.llm,
                &toolscore::llm::metrics::LlmMetrics::default(),
            )?;
            Ok(())
        });
    match result {
        Ok(()) => {
            eprintln!("{}: ok", file.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn serve(config: Option<&std::path::Path>) -> ExitCode {
    let (config, base) = match toolscore::app::load_config(config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let own_telemetry = match toolscore::telemetry::init_logging(&config.telemetry) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run_service(config, base));
    own_telemetry.shutdown();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("error: {e:#}");
            // A configuration problem (evaluator or eval-set files) is a usage error.
            let usage = matches!(
                e.downcast_ref::<toolscore::app::AppError>(),
                Some(toolscore::app::AppError::Load(_))
            );
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

async fn run_service(
    config: toolscore::config::Config,
    base: Option<PathBuf>,
) -> anyhow::Result<()> {
    let listeners = toolscore::app::Listeners::bind(&config).await?;
    let running = toolscore::app::start(config, base.as_deref(), listeners)?;
    // The bound addresses (port 0 in the config: the ones the OS chose).
    let addr =
        |a: Option<std::net::SocketAddr>| a.map_or_else(|| "off".to_owned(), |a| a.to_string());
    tracing::info!(
        otlp_grpc = %addr(running.addr(Listener::OtlpGrpc)),
        otlp_http = %addr(running.addr(Listener::OtlpHttp)),
        api_http = %addr(running.addr(Listener::ApiHttp)),
        api_grpc = %addr(running.addr(Listener::ApiGrpc)),
        "listening"
    );
    let token = running.shutdown.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        token.cancel();
    });
    running.wait().await?;
    Ok(())
}

/// SIGTERM (Kubernetes, docker stop), SIGHUP or Ctrl-C.
async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        // SIGHUP (a closed terminal, a supervisor's reload signal) drains
        // as SIGTERM does: its default would end the process at once.
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(mut term), Ok(mut hup)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
