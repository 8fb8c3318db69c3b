//! The subcommands, one module each; each defines its arguments and a `run`.

mod convert;
mod diff;
mod dump;
mod externalize;
mod extract;
mod formats;
mod generate;
mod info;
mod input;
mod ls;
mod report;
mod show;
mod stats;
mod update;
mod verify;

use std::io::Write;

use clap::{CommandFactory, Parser, Subcommand};
use tensorfile::Format;

/// The command line's definition, its description naming every format the library knows
/// (from the registry: a new format needs no change here).
pub fn command() -> clap::Command {
    Cli::command().about(about()).long_about(None)
}

/// "Read, check, convert and compare tensor files: zTensor v0.1 (.zt), ...".
fn about() -> String {
    let named = |f: &Format| {
        let exts: Vec<String> = f.unit().extensions().iter().map(|e| format!(".{e}")).collect();
        format!("{} ({})", f.unit().title(), exts.join(", "))
    };
    let all: Vec<String> = Format::ALL.iter().map(named).collect();
    let updatable: Vec<&str> = Format::ALL.iter().filter(|f| f.unit().can_update()).map(|f| f.unit().title()).collect();
    format!(
        "Read, check, convert and compare tensor files without running their code: {}. \
         `update` rewrites the weights of: {}.",
        all.join(", "),
        updatable.join(", ")
    )
}

/// Read, check, convert and compare tensor files (the formats are named by `command()`, from
/// the library's registry).
#[derive(Parser)]
#[command(
    name = "tensorfile",
    version,
    about,
    after_help = "Files to read may be URLs: http(s)://host/path (any server that honours Range), \
s3://bucket/key, gs://bucket/key, az://container/key. Only the index and the tensors asked for \
are fetched. Credentials and endpoints come from the usual environment variables (AWS_*, \
e.g. AWS_ENDPOINT_URL for an S3-compatible server; GOOGLE_*; AZURE_*)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    Info(info::Args),
    Ls(ls::Args),
    Convert(convert::Args),
    Extract(extract::Args),
    Verify(verify::Args),
    Diff(diff::Args),
    Stats(stats::Args),
    Report(report::Args),
    Dump(dump::Args),
    Show(show::Args),
    Externalize(externalize::Args),
    Update(update::Args),
    Formats(formats::Args),
    Completions(generate::CompletionsArgs),
    Man(generate::ManArgs),
}

/// How a command that ran to its end went.
pub enum Outcome {
    Success,
    /// The command did its work and found a reason to exit 1 (a problem, a difference); it
    /// has already said why.
    Failure,
}

impl Outcome {
    fn failure_if(failed: bool) -> Outcome {
        if failed { Outcome::Failure } else { Outcome::Success }
    }
}

impl Command {
    /// Run the command, printing its results to `out`.
    pub fn run(self, out: &mut dyn Write) -> anyhow::Result<Outcome> {
        match self {
            Command::Info(args) => info::run(args, out),
            Command::Ls(args) => ls::run(args, out),
            Command::Convert(args) => convert::run(args, out),
            Command::Extract(args) => extract::run(args, out),
            Command::Verify(args) => verify::run(args, out),
            Command::Diff(args) => diff::run(args, out),
            Command::Stats(args) => stats::run(args, out),
            Command::Report(args) => report::run(args, out),
            Command::Dump(args) => dump::run(args, out),
            Command::Show(args) => show::run(args, out),
            Command::Externalize(args) => externalize::run(args, out),
            Command::Update(args) => update::run(args, out),
            Command::Formats(args) => formats::run(args, out),
            Command::Completions(args) => generate::completions(args, out),
            Command::Man(args) => generate::man(args, out),
        }
    }
}

/// A warning on stderr.
fn warn(message: impl std::fmt::Display) {
    eprintln!("tensorfile: warning: {message}");
}

/// A folder to write into, made if missing: local only (files are read from URLs, never
/// written to them).
fn output_folder(dir: &std::path::Path) -> Result<(), tensorfile::Error> {
    if tensorfile::source::url_of(dir).is_some() {
        return Err(tensorfile::Error::unsupported(format!(
            "{}: tensorfile reads URLs but writes only local files",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| tensorfile::Error::from(e).in_file(dir))
}
