//! ringbroker's entry point: parse the command line, run the subcommand.

use std::process::ExitCode;

use clap::Parser;
use ringbroker::cli::{Cli, Command};
use ringbroker::runtime;

fn main() -> ExitCode {
    runtime::logging::init();
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("unnamed");
        tracing::error!(thread = name, "panic: {info}");
        eprintln!("ringbroker: panic on thread {name}: {info}");
    }));
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => {
            let config = match args.into_config() {
                Ok(config) => config,
                Err(e) => {
                    eprintln!("ringbroker: {e:#}");
                    return ExitCode::from(runtime::exit_status::CONFIG as u8);
                }
            };
            match runtime::run(config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("ringbroker: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Bench(args) => match ringbroker::bench::run(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ringbroker bench: {e:#}");
                ExitCode::FAILURE
            }
        },
    }
}
