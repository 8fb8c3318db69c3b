//! Unit tests of the diagnosis's small parts.

use std::path::Path;

use super::{grouped, last_segment};

#[test]
fn numbers_are_grouped_by_thousands() {
    assert_eq!(grouped(0), "0");
    assert_eq!(grouped(999), "999");
    assert_eq!(grouped(1000), "1,000");
    assert_eq!(grouped(1234567), "1,234,567");
    assert_eq!(grouped(u64::MAX), "18,446,744,073,709,551,615");
}

#[test]
fn the_name_of_a_url_is_its_last_segment() {
    assert_eq!(
        last_segment(Path::new("https://h/a/model.safetensors?download=1")).as_deref(),
        Some("model.safetensors")
    );
    assert_eq!(last_segment(Path::new("s3://b/k/x.gguf")).as_deref(), Some("x.gguf"));
    assert_eq!(last_segment(Path::new("https://h/a/")), None);
}
