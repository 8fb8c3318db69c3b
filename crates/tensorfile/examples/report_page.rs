//! Writes the report page for report data given as JSON: `report_page DATA.json PAGE.html`.
//! The browser test (tests/browser) makes its pages with it from hand-written and generated
//! data, the page's own test apart from any format.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        eprintln!("usage: report_page DATA.json PAGE.html");
        return ExitCode::from(2);
    };
    let result = std::fs::read_to_string(input)
        .map_err(|e| format!("{input}: {e}"))
        .and_then(|text| serde_json::from_str(&text).map_err(|e| format!("{input}: {e}")))
        .and_then(|data| {
            std::fs::write(output, tensorfile::report::page::render(&data)).map_err(|e| format!("{output}: {e}"))
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("report_page: {message}");
            ExitCode::FAILURE
        }
    }
}
