//! The router: the subcommands, one module each (each defines its arguments and a `run`),
//! and the dispatch of a parsed command line to its module. What the commands share lives in
//! modules of their own: `input` (the file a reading command opens), and beside `commands`:
//! `outcome`, `warning`, `output_folder`, `progress`, `render`, `format_texts`.

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
mod meta;
mod quantize_args;
mod report;
mod show;
mod stats;
mod update;
mod verify;

use std::io::Write;

use clap::{CommandFactory, Parser, Subcommand};

use crate::format_texts;
use crate::outcome::Outcome;

/// The command line's definition, its texts that name formats made from the library's
/// registry (a new format needs no change here).
pub fn command() -> clap::Command {
    Cli::command().about(format_texts::about()).long_about(None).mut_subcommand("convert", format_texts::convert_help)
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
    /// Threads for the parallel work (reading, converting, quantizing, statistics); default:
    /// every core, or RAYON_NUM_THREADS
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: Option<u32>,
    /// Keep the ranges read from remote files (URLs) in DIR, so that a second read of the same
    /// object (same ETag and size) reads them there; default: TENSORFILE_CACHE_DIR, else none
    #[arg(long, global = true, value_name = "DIR")]
    pub cache: Option<std::path::PathBuf>,
    /// The most bytes --cache keeps (the ranges read longest ago go first); default: 64GiB, or
    /// TENSORFILE_CACHE_LIMIT
    #[arg(long, global = true, value_name = "SIZE", requires = "cache")]
    pub cache_limit: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    Info(info::Args),
    Ls(ls::Args),
    Convert(Box<convert::Args>),
    Extract(extract::Args),
    Verify(verify::Args),
    Diff(diff::Args),
    Stats(stats::Args),
    Report(report::Args),
    Dump(dump::Args),
    Show(show::Args),
    Externalize(externalize::Args),
    Update(update::Args),
    Meta(meta::Args),
    Formats(formats::Args),
    Completions(generate::CompletionsArgs),
    Man(generate::ManArgs),
}

impl Command {
    /// Run the command, printing its results to `out`.
    pub fn run(self, out: &mut dyn Write) -> anyhow::Result<Outcome> {
        match self {
            Command::Info(args) => info::run(args, out),
            Command::Ls(args) => ls::run(args, out),
            Command::Convert(args) => convert::run(*args, out),
            Command::Extract(args) => extract::run(args, out),
            Command::Verify(args) => verify::run(args, out),
            Command::Diff(args) => diff::run(args, out),
            Command::Stats(args) => stats::run(args, out),
            Command::Report(args) => report::run(args, out),
            Command::Dump(args) => dump::run(args, out),
            Command::Show(args) => show::run(args, out),
            Command::Externalize(args) => externalize::run(args, out),
            Command::Update(args) => update::run(args, out),
            Command::Meta(args) => meta::run(args, out),
            Command::Formats(args) => formats::run(args, out),
            Command::Completions(args) => generate::completions(args, out),
            Command::Man(args) => generate::man(args, out),
        }
    }
}
