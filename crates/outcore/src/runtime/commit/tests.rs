//! A commit killed or failing at every step leaves the complete old or the complete new version.

use std::collections::BTreeMap;

use super::*;

/// The files of a directory tree, by relative path, with their contents.
fn contents(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy().to_string();
                out.insert(rel, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    if dir.exists() {
        walk(dir, dir, &mut out);
    }
    out
}

fn write_version(dir: &Path, version: &str) {
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("a"), format!("{version} a")).unwrap();
    std::fs::write(dir.join(format!("only-{version}")), version).unwrap();
    std::fs::write(dir.join("sub").join("b"), format!("{version} b")).unwrap();
}

fn version(name: &str) -> BTreeMap<String, String> {
    let dir = tempfile::tempdir().unwrap();
    write_version(dir.path(), name);
    contents(dir.path())
}

/// What the next open does with the leftovers of the (now dead) process: put an old version
/// moved aside back when its target is missing, remove everything else hidden.
fn clean_up_after_kill(parent: &Path) {
    for entry in std::fs::read_dir(parent).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with('.') && !restore_if_orphaned(&path) {
            std::fs::remove_dir_all(&path).unwrap();
        }
    }
}

/// Only `target` is left in `parent`, holding exactly one of `allowed`.
fn assert_one_of(parent: &Path, target: &Path, allowed: &[&BTreeMap<String, String>], what: &str) {
    let got = contents(target);
    assert!(allowed.contains(&&got), "{what}: {} holds {got:?}", target.display());
    let names: Vec<_> = std::fs::read_dir(parent).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(names.len(), 1, "{what}: leftovers {names:?}");
}

#[test]
fn a_kill_at_any_step_leaves_the_old_or_the_new_version() {
    let (old, new) = (version("old"), version("new"));
    for swap in [true, false] {
        for step in [Step::Synced, Step::MovedAside, Step::InPlace, Step::OldRemoved] {
            for existing in [true, false] {
                let parent = tempfile::tempdir().unwrap();
                let target = parent.path().join("layout-2");
                if existing {
                    write_version(&target, "old");
                }
                let staged = StagedDir::create(&target).unwrap();
                write_version(staged.path(), "new");
                let what = format!("swap {swap}, killed after {step:?}, old version {existing}");
                // The kill happens only at steps this path passes: moving aside is skipped when
                // there is nothing to move or the swap works (a file system may not swap).
                let passes = staged.finish(swap, Some(step)).is_err();
                match step {
                    Step::MovedAside if !existing => assert!(!passes, "{what}"),
                    Step::MovedAside if !swap => assert!(passes, "{what}"),
                    Step::MovedAside => {}
                    _ => assert!(passes, "{what}"),
                }
                clean_up_after_kill(parent.path());
                let reached_new = matches!(step, Step::InPlace | Step::OldRemoved) || !passes;
                match (existing, reached_new) {
                    (_, true) => assert_one_of(parent.path(), &target, &[&new], &what),
                    (true, false) => assert_one_of(parent.path(), &target, &[&old], &what),
                    (false, false) => assert!(!target.exists(), "{what}"),
                }
            }
        }
    }
}

#[test]
fn a_failed_build_leaves_the_old_version_and_no_work_directory() {
    let parent = tempfile::tempdir().unwrap();
    let target = parent.path().join("shards-4");
    write_version(&target, "old");
    let err = build_dir(&target, |work| -> Result<()> {
        write_version(work, "new");
        Err(Error::store(work.join("a"), "injected failure"))
    })
    .unwrap_err();
    assert!(err.to_string().contains("injected failure"), "{err}");
    assert_one_of(parent.path(), &target, &[&version("old")], "failed build");
    // A dropped, uncommitted staging directory is removed too.
    drop(StagedDir::create(&target).unwrap());
    assert_one_of(parent.path(), &target, &[&version("old")], "dropped staging");
}

#[test]
fn commits_replace_old_versions_on_both_paths() {
    for swap in [true, false] {
        let parent = tempfile::tempdir().unwrap();
        let target = parent.path().join("parts-2");
        build_dir(&target, |work| {
            write_version(work, "old");
            Ok(())
        })
        .unwrap();
        assert_one_of(parent.path(), &target, &[&version("old")], "first build");
        let staged = StagedDir::create(&target).unwrap();
        write_version(staged.path(), "new");
        staged.finish(swap, None).unwrap();
        assert_one_of(parent.path(), &target, &[&version("new")], "rebuild");
    }
}

#[test]
fn removal_and_restoring_touch_only_their_own_names() {
    let parent = tempfile::tempdir().unwrap();
    let target = parent.path().join("bbp-2-2");
    write_version(&target, "old");
    // An aside whose target exists is not restored (the commit went through).
    let aside = parent.path().join(".bbp-2-2.old-1");
    write_version(&aside, "older");
    assert!(!restore_if_orphaned(&aside));
    assert!(!restore_if_orphaned(&parent.path().join(".bbp-2-2.building-1")));
    remove_dir(&target).unwrap();
    assert!(!target.exists());
    assert!(restore_if_orphaned(&aside));
    assert_eq!(contents(&target), version("older"));
    assert!(remove_dir(&parent.path().join("missing")).is_err());
}
