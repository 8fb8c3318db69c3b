//! `tensorfile.report`: the HTML report of a file, as `tensorfile report` writes it.

use std::path::PathBuf;

use pyo3::prelude::*;
use tensorfile::TensorFile;
use tensorfile::compare::Tolerance;
use tensorfile::report::{self, ReportOptions};

use crate::errors::IntoPy;

/// Write the report page of `path` (its `.ptd` in `data`) to `output`, compared with `compare`
/// when given; with `data_only`, return the report's document as JSON text instead of writing
/// a page (`output` unused).
#[pyfunction]
#[pyo3(signature = (path, output, compare=None, stats=true, bins=32, atol=None, rtol=None, data=None, data_only=false))]
#[allow(clippy::too_many_arguments)]
pub fn report_page(
    py: Python<'_>,
    path: PathBuf,
    output: PathBuf,
    compare: Option<PathBuf>,
    stats: bool,
    bins: usize,
    atol: Option<f64>,
    rtol: Option<f64>,
    data: Option<PathBuf>,
    data_only: bool,
) -> PyResult<Option<String>> {
    if !(1..=1024).contains(&bins) {
        return Err(tensorfile::Error::usage(format!("{bins} histogram bins: between 1 and 1024"))).py();
    }
    let options = ReportOptions { stats, bins, tolerance: Tolerance::or_numpy(atol, rtol).py()? };
    py.detach(|| {
        let mut open = tensorfile::OpenOptions::new();
        if let Some(data) = &data {
            open.data(data);
        }
        let file = open.open(&path)?;
        let other = compare.as_ref().map(TensorFile::open).transpose()?;
        let name = path.display().to_string();
        let other_name = compare.as_ref().map(|p| p.display().to_string());
        let document = report::gather(&file, &name, &options, other.as_ref().zip(other_name.as_deref()), &|_| {})?;
        if data_only {
            return Ok(Some(document.to_string()));
        }
        report::write_html(&output, &document)?;
        Ok::<_, tensorfile::Error>(None)
    })
    .py()
}
