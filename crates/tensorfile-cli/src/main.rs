//! `tensorfile`: inspect, check, convert, extract and compare tensor files.
//!
//! Exit status: 0 success; 1 an invalid file, differences found, or any other failure;
//! 2 a usage error (bad arguments or option values, an output extension of no known format).

mod commands;
mod format_texts;
mod outcome;
mod output_folder;
mod progress;
mod render;
mod safe_name;
mod warning;

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use clap::FromArgMatches;
use tensorfile::ErrorKind;

use commands::Cli;
use outcome::Outcome;

fn main() -> ExitCode {
    let cli = match Cli::from_arg_matches(&commands::command().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let threads = cli.threads.map_or(Ok(()), |n| tensorfile::set_threads(n as usize).map_err(anyhow::Error::from));
    let cache = threads.and_then(|()| set_cache(&cli));
    let result = cache.and_then(|()| cli.command.run(&mut out)).and_then(|outcome| {
        out.flush()?;
        Ok(outcome)
    });
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Failure) => ExitCode::from(1),
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            match err.downcast_ref::<tensorfile::Error>() {
                Some(e) => eprintln!("tensorfile: {}", render::error(e)),
                None => eprintln!("tensorfile: {err}"),
            }
            ExitCode::from(exit_code(&err))
        }
    }
}

/// 2 for usage errors, 1 for everything else.
fn exit_code(err: &anyhow::Error) -> u8 {
    match err.downcast_ref::<tensorfile::Error>().map(tensorfile::Error::kind) {
        Some(ErrorKind::Usage(_)) => 2,
        _ => 1,
    }
}

/// Output piped into a reader that stopped early (`tensorfile ls x | head`): not an error.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
}

/// `--cache DIR` and `--cache-limit SIZE`: the remote ranges' cache, for the whole process.
fn set_cache(cli: &commands::Cli) -> anyhow::Result<()> {
    let Some(dir) = &cli.cache else { return Ok(()) };
    let limit = match &cli.cache_limit {
        Some(text) => tensorfile::convert::parse_size(text)?,
        None => tensorfile::io::DEFAULT_CACHE_LIMIT,
    };
    tensorfile::io::set_remote_cache(Some(tensorfile::io::RemoteCache { dir: dir.clone(), limit }));
    Ok(())
}
