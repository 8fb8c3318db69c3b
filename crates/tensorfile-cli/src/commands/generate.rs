//! `tensorfile completions SHELL` and `tensorfile man`: shell completions and the manual page,
//! both generated from the command line's own definition, so they always match it.

use std::io::{self, Write};

use clap_complete::Shell;
use clap_mangen::Man;

use crate::outcome::Outcome;

/// Print a shell completion script for tensorfile.
///
/// For example: `tensorfile completions bash >
/// ~/.local/share/bash-completion/completions/tensorfile`, `tensorfile completions zsh >
/// ~/.zfunc/_tensorfile` (with ~/.zfunc on fpath), `tensorfile completions fish >
/// ~/.config/fish/completions/tensorfile.fish`.
#[derive(clap::Args)]
pub struct CompletionsArgs {
    /// The shell the script is for.
    #[arg(value_enum)]
    shell: Shell,
}

/// Print tensorfile's manual page (roff): every command and option on one page.
///
/// For example: `tensorfile man > tensorfile.1; man ./tensorfile.1`, or install it as
/// `~/.local/share/man/man1/tensorfile.1`.
#[derive(clap::Args)]
pub struct ManArgs {}

pub fn completions(args: CompletionsArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let mut cmd = super::command();
    let name = cmd.get_name().to_owned();
    // Generated into memory first: the generators panic on a failed write, and a closed pipe
    // is not an error here.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, name, &mut script);
    out.write_all(&script)?;
    Ok(Outcome::Success)
}

pub fn man(_args: ManArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    // No `help` subcommand on the page: `--help` is listed with every command. Building fills
    // in each subcommand's full name ("tensorfile ls") for its synopsis.
    let mut cmd = super::command().disable_help_subcommand(true);
    cmd.build();
    out.write_all(manual_page(&cmd)?.as_bytes())?;
    Ok(Outcome::Success)
}

/// The page of `cmd`: its own sections, then a COMMANDS section with each subcommand's
/// synopsis, description and options (one page, rather than pages per subcommand that a
/// single binary could not install by itself).
fn manual_page(cmd: &clap::Command) -> io::Result<String> {
    let top = Man::new(cmd.clone());
    let mut page = Vec::new();
    top.render_title(&mut page)?;
    top.render_name_section(&mut page)?;
    top.render_synopsis_section(&mut page)?;
    top.render_description_section(&mut page)?;
    top.render_options_section(&mut page)?;

    page.extend_from_slice(b".SH COMMANDS\n");
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_bin_name().unwrap_or_else(|| sub.get_name());
        page.extend_from_slice(format!(".SS \"{name}\"\n").as_bytes());
        let man = Man::new(sub.clone());
        let mut sections = Vec::new();
        man.render_synopsis_section(&mut sections)?;
        man.render_description_section(&mut sections)?;
        man.render_options_section(&mut sections)?;
        if sub.get_after_long_help().is_some() || sub.get_after_help().is_some() {
            man.render_extra_section(&mut sections)?;
        }
        page.extend_from_slice(&demote_headings(&String::from_utf8_lossy(&sections)).into_bytes());
    }

    if cmd.get_after_long_help().is_some() || cmd.get_after_help().is_some() {
        top.render_extra_section(&mut page)?;
    }
    if cmd.get_version().is_some() {
        top.render_version_section(&mut page)?;
    }
    Ok(once_preamble(&String::from_utf8_lossy(&page)))
}

/// The page with the roff preamble (the `Aq` string, an apostrophe) kept only where it first
/// appears: each section rendered on its own repeats it.
fn once_preamble(page: &str) -> String {
    const PREAMBLE: [&str; 2] = [".ie \\n(.g .ds Aq \\(aq", ".el .ds Aq '"];
    let mut seen = [false; 2];
    let mut text = String::with_capacity(page.len());
    for line in page.lines() {
        if let Some(i) = PREAMBLE.iter().position(|p| *p == line) {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
        }
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// A subcommand's sections inside the COMMANDS section: its synopsis and description start
/// plain paragraphs, and other headings (OPTIONS, EXTRA, help headings) become bold labels.
fn demote_headings(roff: &str) -> String {
    let mut text = String::with_capacity(roff.len());
    for line in roff.lines() {
        match line.strip_prefix(".SH ") {
            Some("SYNOPSIS" | "DESCRIPTION") => text.push_str(".PP"),
            Some("EXTRA") => text.push_str(".PP"),
            Some(heading) => {
                let heading = heading.trim_matches('"');
                text.push_str(".PP\n.B \"");
                text.push_str(heading);
                text.push('"');
            }
            None => text.push_str(line),
        }
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::demote_headings;

    #[test]
    fn headings_become_paragraphs_and_labels() {
        let roff = ".SH SYNOPSIS\n\\fBtensorfile ls\\fR\n.SH OPTIONS\n.TP\n\\fB\\-\\-json\\fR\n";
        assert_eq!(demote_headings(roff), ".PP\n\\fBtensorfile ls\\fR\n.PP\n.B \"OPTIONS\"\n.TP\n\\fB\\-\\-json\\fR\n");
    }
}
