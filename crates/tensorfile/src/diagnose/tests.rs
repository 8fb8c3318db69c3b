//! Unit tests of the diagnosis's small parts.

use std::path::Path;

use super::last_segment;

#[test]
fn the_name_of_a_url_is_its_last_segment() {
    assert_eq!(
        last_segment(Path::new("https://h/a/model.safetensors?download=1")).as_deref(),
        Some("model.safetensors")
    );
    assert_eq!(last_segment(Path::new("s3://b/k/x.gguf")).as_deref(), Some("x.gguf"));
    assert_eq!(last_segment(Path::new("https://h/a/")), None);
}
