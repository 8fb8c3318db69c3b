//! External data: a tensor's bytes in a file beside the model (`external_data` keys
//! `location`, `offset`, `length`), found only inside the model's folder.

use std::path::{Component, Path, PathBuf};

use super::proto::TensorProto;
use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::source::Source;

/// Where an external tensor's bytes are.
#[derive(Debug, Clone)]
pub struct Place {
    /// Index into [`Files`].
    pub file: usize,
    pub offset: u64,
    pub len: u64,
}

/// The external files a model names, each opened (mapped) once.
#[derive(Default)]
pub struct Files {
    /// `location` as the model gives it, the path it resolves to, the opened file.
    pub opened: Vec<(String, PathBuf, Source)>,
}

/// What `external_data` says of a tensor.
pub struct Declared {
    pub location: String,
    pub offset: u64,
    pub length: Option<u64>,
}

/// The `external_data` entries of `t`: `location` is required; `offset` and `length` are
/// decimal integers; other keys (`checksum`...) are ignored.
pub fn declared(t: &TensorProto) -> Result<Declared> {
    let mut location = None;
    let (mut offset, mut length) = (0u64, None);
    for e in &t.external_data {
        let number = || {
            e.value.parse::<u64>().map_err(|_| {
                Error::invalid(Rule::BadField, format!("external data {} {:?} is not a number", e.key, e.value))
            })
        };
        match e.key.as_str() {
            "location" => location = Some(e.value.clone()),
            "offset" => offset = number()?,
            "length" => length = Some(number()?),
            _ => {}
        }
    }
    let location = location.ok_or_else(|| Error::invalid(Rule::MissingField, "external data without a location"))?;
    Ok(Declared { location, offset, length })
}

/// `location` is a relative path of plain components (no `..`, no root, no drive, no
/// backslash): checked before the model's folder is known, so that a model read from memory is
/// refused for it too.
pub fn check_location(location: &str) -> Result<()> {
    let rel = Path::new(location);
    let plain = !location.is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !plain || location.contains('\\') || location.contains('\0') {
        return Err(Error::invalid(
            Rule::UnsafePath,
            format!("external data location {location:?} is not a relative path inside the model's folder"),
        ));
    }
    Ok(())
}

/// `location` as a path inside `folder`: relative, of plain components only (no `..`, no
/// root, no drive), and, symlinks resolved, still inside the folder.
pub fn resolve(folder: &Path, location: &str) -> Result<PathBuf> {
    check_location(location)?;
    let path = folder.join(location);
    let outside = || {
        Error::invalid(
            Rule::UnsafePath,
            format!("external data location {location:?} leads outside the model's folder"),
        )
    };
    let real_folder = folder.canonicalize().map_err(|e| Error::from(e).in_file(folder))?;
    let real = path.canonicalize().map_err(|e| Error::from(e).named_by(&path, how_named(location)))?;
    if !real.starts_with(&real_folder) {
        return Err(outside());
    }
    Ok(path)
}

/// How the path of external data `location` was found, for an error about that file.
fn how_named(location: &str) -> String {
    format!("the external data location {location:?} of the tensor, in the model's folder")
}

impl Files {
    /// Place the external tensor `d` of `nbytes` bytes, opening its file (inside `folder`)
    /// unless it is open already: `offset` and `length` must lie inside the file.
    pub fn place(&mut self, folder: &Path, d: &Declared) -> Result<Place> {
        let file = match self.opened.iter().position(|(l, _, _)| *l == d.location) {
            Some(i) => i,
            None => {
                let path = resolve(folder, &d.location)?;
                let src = Source::map_file(&path).map_err(|e| e.named_by(&path, how_named(&d.location)))?;
                self.opened.push((d.location.clone(), path, src));
                self.opened.len() - 1
            }
        };
        let size = self.opened[file].2.len();
        let len = match d.length {
            Some(l) => l,
            None => size.saturating_sub(d.offset),
        };
        let end = checked::add(d.offset, len, "external data end")?;
        if d.offset > size || end > size {
            return Err(Error::invalid(
                Rule::OutOfBounds,
                format!("external data at {}..{end} of {:?}, which is {size} bytes long", d.offset, d.location),
            ));
        }
        Ok(Place { file, offset: d.offset, len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_leaving_the_folder_are_refused_before_any_file_is_touched() {
        let dir = Path::new("/nonexistent-folder");
        for bad in ["../w.bin", "/etc/passwd", "a/../../w.bin", "", "a\\..\\b"] {
            assert_eq!(resolve(dir, bad).unwrap_err().rule(), Some(Rule::UnsafePath), "{bad:?}");
        }
    }
}
