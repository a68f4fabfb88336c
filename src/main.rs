//! The `toolscore` binary: parses arguments and starts the requested command.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use toolscore::cli::{self, eval::EvalArgs};

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
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            // clap uses 0 for --help/--version and 2 for usage errors, as we do.
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    match cli.command {
        Command::Eval {
            eval_set,
            evaluators,
            traces,
            output,
            min_score,
            binding_attributes,
        } => cli::eval::run(&EvalArgs {
            eval_set,
            evaluators,
            traces,
            output,
            min_score,
            binding_attributes,
        })
        .into(),
    }
}
