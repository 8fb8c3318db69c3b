//! `tensorfile completions SHELL` and `tensorfile man`: generated from the command line's
//! definition, they cover every subcommand and option.

use crate::common::{code, ok, stderr, stdout, tensorfile};

/// Every subcommand a user can type (not clap's own `help`).
const COMMANDS: [&str; 11] =
    ["info", "ls", "convert", "extract", "verify", "diff", "dump", "externalize", "update", "completions", "man"];

#[test]
fn bash_completion_knows_every_command_and_option() {
    let script = ok(&[&"completions", &"bash"]);
    assert!(script.contains("complete -F _tensorfile"), "not a bash completion script:\n{script}");
    for command in COMMANDS {
        assert!(script.contains(&format!("tensorfile__subcmd__{command}")), "no completion of `{command}`");
    }
    // Options of subcommands, and the shells `completions` takes.
    for option in ["--skip-unsupported", "--max-shard-size", "--compress", "--deep", "--json"] {
        assert!(script.contains(option), "no completion of {option}");
    }
    assert!(script.contains("bash elvish fish powershell zsh"), "completions' shells not offered");
}

#[test]
fn every_shell_gets_a_script() {
    for (shell, marker) in [
        ("zsh", "#compdef tensorfile"),
        ("fish", "complete -c tensorfile"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "set edit:completion:arg-completer[tensorfile]"),
    ] {
        let script = ok(&[&"completions", &shell]);
        assert!(script.contains(marker), "{shell}: no {marker:?} in:\n{script}");
        assert!(script.contains("skip-unsupported"), "{shell}: convert's options missing");
    }
}

#[test]
fn unknown_shell_is_a_usage_error() {
    let o = tensorfile(&[&"completions", &"tcsh"]);
    assert_eq!(code(&o), 2, "stderr: {}", stderr(&o));
    assert!(stdout(&o).is_empty());
    assert!(stderr(&o).contains("tcsh"), "stderr: {}", stderr(&o));
    // A shell is required.
    assert_eq!(code(&tensorfile(&[&"completions"])), 2);
}

#[test]
fn man_page_is_roff_and_covers_every_command() {
    let page = ok(&[&"man"]);
    let lines: Vec<&str> = page.lines().collect();
    // The title comes first: nothing but the roff preamble (.ie/.el) before it.
    let title = lines.iter().position(|l| l.starts_with(".TH ")).expect("a .TH line");
    assert!(lines[..title].iter().all(|l| l.starts_with(".ie ") || l.starts_with(".el ")), "{page}");
    assert!(lines[title].starts_with(".TH tensorfile 1 "), "title: {}", lines[title]);
    assert_eq!(lines.iter().filter(|l| l.starts_with(".TH ")).count(), 1, "one page, one title");
    for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS"] {
        assert!(lines.contains(&format!(".SH {section}").as_str()), "no {section} section");
    }
    for command in COMMANDS {
        assert!(lines.contains(&format!(".SS \"tensorfile {command}\"").as_str()), "no section for `{command}`");
    }
    assert!(!page.contains("tensorfile help"), "clap's help subcommand is not a page section");
    // Options of the subcommands, as roff writes them.
    assert!(page.contains(r"\fB\-\-skip\-unsupported\fR"));
    assert!(page.contains(r"\fB\-\-max\-shard\-size\fR"));
    // The about text names every format of the registry.
    for format in tensorfile::Format::ALL {
        let title = format.unit().title().replace('.', "\\&.");
        assert!(page.contains(format.unit().title()) || page.contains(&title), "the page does not name {format}");
    }
}

#[test]
fn man_takes_no_arguments() {
    assert_eq!(code(&tensorfile(&[&"man", &"ls"])), 2);
}

#[test]
fn the_description_names_every_format_of_the_registry() {
    let help = ok(&[&"--help"]);
    for format in tensorfile::Format::ALL {
        let unit = format.unit();
        assert!(help.contains(unit.title()), "{} missing from --help:\n{help}", unit.title());
        for ext in unit.extensions() {
            assert!(help.contains(&format!(".{ext}")), ".{ext} missing from --help");
        }
    }
}
