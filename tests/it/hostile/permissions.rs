//! Permissions, owners.

use super::*;

#[test]
fn read_only_directory_is_refused_naming_it() {
    let dir = tree(PY);
    let sub = dir.path().join("streamy");
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o555)).unwrap();
    let expect_refusal = unsafe { libc::geteuid() } != 0;
    if expect_refusal {
        apply_case(
            dir.path(),
            &[],
            1,
            &["streamy/ (the folder)", "read-only", "make it writable"],
        );
    } else {
        // root writes anyway (the kernel lets it); the invariant still holds
        apply_case(dir.path(), &[], 0, &["inserted"]);
    }
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn read_only_file_is_refused_naming_it() {
    let dir = tree(PY);
    std::fs::set_permissions(
        dir.path().join(AGENT),
        std::fs::Permissions::from_mode(0o444),
    )
    .unwrap();
    apply_case(
        dir.path(),
        &[],
        1,
        &[AGENT, "read-only", "make it writable"],
    );
}

#[test]
fn ownership_is_kept_when_root_patches_a_users_file() {
    if unsafe { libc::geteuid() } != 0 {
        return; // only root can hand a file to another user to set the case up
    }
    let dir = tree(PY);
    std::os::unix::fs::chown(dir.path().join(AGENT), Some(4321), Some(4321)).unwrap();
    apply_case(dir.path(), &[], 0, &["inserted"]);
    let meta = std::fs::metadata(dir.path().join(AGENT)).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (4321, 4321));
}
