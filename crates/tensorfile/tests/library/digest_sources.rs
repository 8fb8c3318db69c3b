//! Where the sha256 a file must have comes from when nobody gives it: the Git LFS pointer a
//! clone of a Hugging Face repository holds for the file (git itself makes the repository:
//! its index, loose objects, packs and deltas, with a clean filter that writes the pointer as
//! git-lfs does), and the record the hub's client leaves beside a download into a folder.
//! Each is checked beside the load (`Verify::Full`): a byte flipped in the file is refused
//! naming where the digest came from; a file changed since (its time moved on) is no longer
//! held to the old record, as git and the client themselves decide.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use tensorfile::{DigestFrom, OpenOptions, Rule, TensorFile, Verify};

use crate::common;

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "gc.auto=0"])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository whose `*.safetensors` go through a clean filter writing Git LFS pointers (and,
/// when `note` is set, a long extra key before the oid, so that git stores one pointer as a
/// delta of another).
fn lfs_repo(dir: &Path, note: bool) {
    git(dir, &["init", "-q"]);
    let filter = dir.join("lfs-clean.sh");
    let extra = if note { format!("x-note {}\\n", "n".repeat(400)) } else { String::new() };
    std::fs::write(
        &filter,
        format!(
            "#!/bin/sh\nf=$(mktemp)\ncat > \"$f\"\nsha=$(sha256sum \"$f\" | cut -d' ' -f1)\nsize=$(wc -c < \"$f\" | tr -d ' ')\n\
             rm -f \"$f\"\nprintf 'version https://git-lfs.github.com/spec/v1\\n{extra}oid sha256:%s\\nsize %s\\n' \"$sha\" \"$size\"\n"
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&filter, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    git(dir, &["config", "filter.lfs.clean", filter.to_str().unwrap()]);
    git(dir, &["config", "filter.lfs.required", "true"]);
    std::fs::write(dir.join(".gitattributes"), "*.safetensors filter=lfs diff=lfs merge=lfs -text\n").unwrap();
}

fn load_all(file: &TensorFile) -> tensorfile::Result<()> {
    file.while_checking_digests(|| (0..file.entries().len()).try_for_each(|i| file.read_index(i).map(|_| ())))
}

fn open_full(path: &Path) -> TensorFile {
    OpenOptions::new().verify(Verify::Full).open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Flip one byte in place and put the file's modification time back (what a disk's bit rot
/// does: the bytes change, nothing else).
fn rot(path: &Path, at: usize) {
    let modified = std::fs::metadata(path).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x01;
    std::fs::write(path, &bytes).unwrap();
    std::fs::File::options().write(true).open(path).unwrap().set_modified(modified).unwrap();
}

fn source_model() -> Vec<u8> {
    std::fs::read(common::fixtures_dir().join("safetensors/dtypes.safetensors")).unwrap()
}

#[test]
fn a_git_lfs_clone_checks_each_file_against_its_pointer_loose_packed_and_deltified() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    lfs_repo(repo, true);
    let sub = repo.join("weights");
    std::fs::create_dir(&sub).unwrap();
    let path = sub.join("model.safetensors");
    let model = source_model();
    // Three versions committed, so that the pack holds pointers as deltas of each other.
    for version in 0..3u8 {
        let mut bytes = model.clone();
        let last = bytes.len() - 1;
        bytes[last] ^= version;
        std::fs::write(&path, &bytes).unwrap();
        git(repo, &["add", "-A"]);
        git(repo, &["commit", "-q", "-m", &format!("v{version}")]);
    }
    let current = std::fs::read(&path).unwrap();
    let sha = hex::encode(Sha256::digest(&current));
    let pointer = git(repo, &["cat-file", "-p", ":weights/model.safetensors"]);
    assert!(pointer.contains(&format!("oid sha256:{sha}")), "{pointer}");

    let check = |how: &str| {
        let file = open_full(&path);
        let expected = file.expected_digests();
        assert_eq!(expected.len(), 1, "{how}");
        assert_eq!(hex::encode(expected[0].1.sha256), sha, "{how}");
        match &expected[0].1.from {
            DigestFrom::GitLfs { path_in_repo, .. } => assert_eq!(path_in_repo, "weights/model.safetensors"),
            other => panic!("{how}: {other:?}"),
        }
        load_all(&file).unwrap_or_else(|e| panic!("{how}: {e}"));
    };
    check("loose objects");
    git(repo, &["repack", "-a", "-d", "-f", "-q", "--window=10", "--depth=10"]);
    git(repo, &["prune-packed"]);
    let objects = repo.join(".git/objects");
    let loose = std::fs::read_dir(&objects).unwrap().flatten().filter(|e| e.file_name().len() == 2).count();
    assert_eq!(loose, 0, "every object packed");
    let packs: Vec<_> = std::fs::read_dir(objects.join("pack"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "idx"))
        .collect();
    let listing = git(repo, &["verify-pack", "-v", packs[0].to_str().unwrap()]);
    // `verify-pack -v` lists a delta with its depth and base: more than five columns.
    let deltas = listing.lines().filter(|l| l.contains(" blob ") && l.split_whitespace().count() > 5).count();
    assert!(deltas >= 1, "no pointer stored as a delta:\n{listing}");
    check("packed, pointers as deltas");

    // One byte rotted: refused, naming the file and the pointer's repository.
    rot(&path, current.len() - 1);
    let file = open_full(&path);
    let err = load_all(&file).unwrap_err();
    assert_eq!(err.rule(), Some(Rule::ChecksumMismatch), "{err}");
    let text = err.to_string();
    assert!(text.contains("Git LFS pointer of weights/model.safetensors") && text.contains(&sha), "{text}");
    // Verification off: nothing compared.
    let off = OpenOptions::new().verify(Verify::Checksums).open(&path).unwrap();
    assert!(off.expected_digests().is_empty());

    // Changed on purpose (a new modification time): git takes it for modified, and so do we.
    std::fs::write(&path, &current[..]).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    assert!(open_full(&path).expected_digests().is_empty());
    // A file git does not track has no pointer.
    let other = repo.join("untracked.safetensors");
    std::fs::write(&other, &model).unwrap();
    assert!(open_full(&other).expected_digests().is_empty());
}

#[test]
fn a_hub_download_into_a_folder_is_checked_against_its_record() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path();
    std::fs::create_dir_all(folder.join("sub")).unwrap();
    let path = folder.join("sub/model.safetensors");
    let model = source_model();
    std::fs::write(&path, &model).unwrap();
    let sha = hex::encode(Sha256::digest(&model));
    let records = folder.join(".cache/huggingface/download/sub");
    std::fs::create_dir_all(&records).unwrap();
    let record = records.join("model.safetensors.metadata");
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs_f64();
    // As the client writes it: the commit, the ETag (the LFS sha256), the time.
    std::fs::write(&record, format!("{}\n{sha}\n{now}\n", "c".repeat(40))).unwrap();
    let file = open_full(&path);
    assert!(matches!(&file.expected_digests()[0].1.from, DigestFrom::HubDownload(p) if p == &record));
    load_all(&file).unwrap();
    rot(&path, model.len() - 1);
    let err = load_all(&open_full(&path)).unwrap_err();
    assert_eq!(err.rule(), Some(Rule::ChecksumMismatch));
    assert!(err.to_string().contains("Hugging Face download recorded in"), "{err}");
    // A record older than the file (written a minute before it) no longer holds; nor does a
    // small file's (its ETag a git blob id, not a sha256).
    std::fs::write(&record, format!("{}\n{sha}\n{}\n", "c".repeat(40), now - 60.0)).unwrap();
    assert!(open_full(&path).expected_digests().is_empty());
    std::fs::write(&record, format!("{}\n{}\n{now}\n", "c".repeat(40), "a".repeat(40))).unwrap();
    assert!(open_full(&path).expected_digests().is_empty());
}
