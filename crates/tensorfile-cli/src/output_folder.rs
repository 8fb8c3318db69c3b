//! The folder a command writes its files into (`extract`, `externalize`).

use std::path::Path;

/// Make `dir` if it is missing: local only (files are read from URLs, never written to them).
pub fn create(dir: &Path) -> Result<(), tensorfile::Error> {
    if tensorfile::io::url_of(dir).is_some() {
        return Err(tensorfile::Error::unsupported(format!(
            "{}: tensorfile reads URLs but writes only local files",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| tensorfile::Error::from(e).in_file(dir))
}
