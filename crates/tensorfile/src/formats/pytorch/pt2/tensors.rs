//! Finding each model's tensors, in whichever layout the archive has: the configs of
//! torch >= 2.9 (records that are whole storages, or pickled payloads), the `torch.save`
//! files of torch 2.8 and 2.3-2.7, and sample inputs. AOTInductor's weights are in `aoti`.

use std::collections::HashMap;

use serde_json::{Value as Json, json};

use super::config::{self, Payload};
use super::model;
use super::read::{Model, Pt2Reader, Pt2Tensor, TensorSource};
use crate::error::{Error, Result, Rule};
use crate::formats::FormatReader;
use crate::formats::pytorch::pt::PtReader;
use crate::model::{ByteOrder, Encoding, Entry, Kind, MetaValue, Storage, TensorInfo};

fn storage(offset: u64, len: u64, method: u16, big_endian: bool) -> Storage {
    Storage::new(offset, len)
        .with_encoding(if method == 0 { Encoding::Raw } else { Encoding::Deflate })
        .with_byte_order(if big_endian { ByteOrder::Big } else { ByteOrder::Little })
}

impl Pt2Reader {
    pub(super) fn add_model(&mut self, name: &str, legacy: bool, prefixed: bool) -> Result<()> {
        let definition =
            if legacy { "serialized_exported_program.json".to_string() } else { format!("models/{name}.json") };
        let summary = match self.archive.read_text(&definition)? {
            Some(text) => model::summarize(name, &text).map_err(|e| e.message()),
            None => Err(format!("no {definition}")),
        };
        let kinds = summary.as_ref().map(|s| s.kinds.clone()).unwrap_or_default();
        let prefix = if prefixed { format!("{name}/") } else { String::new() };
        for (folder, default_kind, config_names, legacy_file) in [
            ("data/weights/", "parameter", ["weights_config", "model_param_config"], "serialized_state_dict.pt"),
            ("data/constants/", "constant", ["constants_config", "model_constants_config"], "serialized_constants.pt"),
        ] {
            let config = config_names
                .iter()
                .map(|c| format!("{folder}{name}_{c}.json"))
                .find(|c| self.archive.record(c).is_some());
            let pickled = if legacy { legacy_file.to_string() } else { format!("{folder}{name}.pt") };
            if let Some(config) = config {
                let text = self.archive.read_text(&config)?.unwrap_or_default();
                for payload in config::parse(&text)? {
                    match payload {
                        Ok(p) => self.add_payload(name, &prefix, folder, default_kind, &kinds, p),
                        Err((fqn, error)) => self.unreadable(format!("{prefix}{fqn}"), error),
                    }
                }
            } else if self.archive.record(&pickled).is_some() {
                let nested = self.open_nested(&pickled)?;
                let reader = &self.nested[nested].1;
                let found: Vec<(String, Entry)> =
                    reader.entries().iter().map(|e| (e.info().name().to_string(), e.clone())).collect();
                for (index, (fqn, e)) in found.into_iter().enumerate() {
                    let kind = kinds.get(&fqn).copied().unwrap_or(default_kind);
                    let t = Pt2Tensor {
                        model: name.into(),
                        fqn: fqn.clone(),
                        kind,
                        source: TensorSource::Pickled { nested, index, view: None },
                    };
                    self.push(&prefix, t, e);
                }
            }
        }
        let aoti_config = format!("data/aotinductor/{name}/weights_config.json");
        if let Some(text) = self.archive.read_text(&aoti_config)? {
            self.add_aoti_weights(name, &prefix, &text)?;
        }
        let sample_inputs = self.sample_inputs(name);
        let aoti = self.aoti_metadata(name);
        let artifacts = self
            .archive
            .records_under(&format!("data/aotinductor/{name}/"))
            .into_iter()
            .map(|r| {
                let size = self.archive.record(&r).map_or(0, |e| e.size);
                json!({ "name": r, "bytes": size })
            })
            .collect();
        self.models.push(Model { name: name.into(), summary, sample_inputs, artifacts, aoti });
        Ok(())
    }

    pub(super) fn unreadable(&mut self, name: String, error: Error) {
        self.catalog.push_unreadable(name, String::new(), Vec::new(), error);
    }

    pub(super) fn push(&mut self, prefix: &str, t: Pt2Tensor, e: Entry) {
        let e = e.with_name(format!("{prefix}{}", t.fqn)).with_extra(vec![
            ("source".into(), MetaValue::from(t.kind)),
            ("model".into(), MetaValue::from(t.model.as_str())),
        ]);
        self.catalog.push(e);
        self.tensors.push(t);
    }

    pub(super) fn open_nested(&mut self, record: &str) -> Result<usize> {
        if let Some(i) = self.nested.iter().position(|(r, _)| r == record) {
            return Ok(i);
        }
        let e = self
            .archive
            .record(record)
            .ok_or_else(|| Error::invalid(Rule::MissingField, format!("no record {record}")))?;
        // A `torch.save` file inside the archive (torch 2.8's `data/weights/<m>.pt`, sample
        // inputs, AOTInductor's on-disk weights) is an archive of its own: stored (as PyTorch
        // writes it), it is opened in place and read by range like the outer one (only its
        // directory and `data.pkl` now, its storages when a tensor is read); deflated (an
        // archive rewritten by Python's `zipfile`), it is inflated whole now.
        let region = self.archive.entry_region(e)?;
        let reader = PtReader::open_region(region).map_err(|err| err.within(record, Rule::BadField))?;
        self.nested.push((record.to_string(), reader));
        Ok(self.nested.len() - 1)
    }

    fn add_payload(
        &mut self,
        model: &str,
        prefix: &str,
        folder: &str,
        default_kind: &'static str,
        kinds: &HashMap<String, &'static str>,
        p: Payload,
    ) {
        let kind = kinds.get(&p.fqn).copied().unwrap_or(if p.is_param { "parameter" } else { default_kind });
        let record_name = format!("{folder}{}", p.path_name);
        let result = if p.use_pickle {
            self.pickled_payload(model, kind, &record_name, &p)
        } else {
            self.record_payload(model, kind, &record_name, &p)
        };
        match result {
            Ok((t, e)) => self.push(prefix, t, e),
            Err(error) => {
                // What the config says the tensor is, even when its bytes cannot be had.
                let (dtype, shape) = p.view.map(|v| (v.dtype.name().to_string(), v.shape)).unwrap_or_default();
                let error = if p.use_pickle && error.rule() == Some(Rule::ForbiddenGlobal) {
                    Error::invalid(
                        Rule::ForbiddenGlobal,
                        format!(
                            "{} (a tensor subclass: only torch can rebuild it, by running its code)",
                            error.detail()
                        ),
                    )
                } else {
                    error
                };
                self.catalog.push_unreadable(format!("{prefix}{}", p.fqn), dtype, shape, error);
            }
        }
    }

    /// A payload pickled in a `torch.save` file of its own: that file's first tensor.
    fn pickled_payload(
        &mut self,
        model: &str,
        kind: &'static str,
        record_name: &str,
        p: &Payload,
    ) -> Result<(Pt2Tensor, Entry)> {
        let nested = self.open_nested(record_name)?;
        let e = self.nested[nested]
            .1
            .entries()
            .first()
            .cloned()
            .ok_or_else(|| Error::invalid(Rule::MissingField, format!("{record_name} holds no tensor")))?;
        let t = Pt2Tensor {
            model: model.into(),
            fqn: p.fqn.clone(),
            kind,
            source: TensorSource::Pickled { nested, index: 0, view: None },
        };
        Ok((t, e))
    }

    /// A payload stored as a record holding a whole storage, the tensor a view of it.
    fn record_payload(
        &self,
        model: &str,
        kind: &'static str,
        record_name: &str,
        p: &Payload,
    ) -> Result<(Pt2Tensor, Entry)> {
        let view = p.view.clone().ok_or_else(|| Error::invalid(Rule::MissingField, "no tensor_meta"))?;
        let record = self
            .archive
            .record(record_name)
            .cloned()
            .ok_or_else(|| Error::invalid(Rule::MissingField, format!("no record {record_name}")))?;
        let elem = view.dtype.size().ok_or_else(|| Error::unsupported(format!("dtype {}", view.dtype)))?;
        if record.size % elem != 0 {
            return Err(Error::invalid(
                Rule::SizeMismatch,
                format!("{record_name}: {} bytes is not a whole number of {}", record.size, view.dtype),
            ));
        }
        let (start, _) = view.check_within(record.size)?;
        let info = TensorInfo::new(p.fqn.clone(), Kind::Tensor, view.dtype, view.shape.clone(), view.layout())?;
        let nbytes = info.nbytes()?;
        let e = Entry::new(info, storage(record.data_offset + start, nbytes, record.method, self.big_endian))?;
        let t =
            Pt2Tensor { model: model.into(), fqn: p.fqn.clone(), kind, source: TensorSource::Record { record, view } };
        Ok((t, e))
    }

    fn sample_inputs(&mut self, name: &str) -> Vec<Json> {
        let record = format!("data/sample_inputs/{name}.pt");
        if self.archive.record(&record).is_none() {
            return Vec::new();
        }
        match self.open_nested(&record) {
            Ok(i) => self.nested[i]
                .1
                .entries()
                .iter()
                .map(
                    |e| json!({ "name": e.info().name(), "dtype": e.info().dtype().name(), "shape": e.info().shape() }),
                )
                .collect(),
            Err(e) => vec![json!({ "error": e.message() })],
        }
    }
}
