//! `lancer verify`: each kind of damage to a dataset is found and named.

use lancer_testkit::TempDir;

use crate::common::lancer;
use crate::{copy_dir, datasets};

#[test]
fn verify_finds_each_kind_of_damage() {
    let src = datasets().join("pylance-14/history");
    let ok = lancer().arg("verify").arg(&src).output().unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    let base = TempDir::new("cli-verify");
    let data_file = |d: &std::path::Path| {
        std::fs::read_dir(d.join("data"))
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path()
    };
    type Damage<'a> = Box<dyn Fn(&std::path::Path) + 'a>;
    let damages: Vec<(&str, Damage<'_>, &str)> = vec![
        (
            "missing",
            Box::new(|d| std::fs::remove_file(data_file(d)).unwrap()),
            "not found",
        ),
        (
            "truncated",
            Box::new(|d| {
                let p = data_file(d);
                let b = std::fs::read(&p).unwrap();
                std::fs::write(&p, &b[..b.len() / 2]).unwrap();
            }),
            "bytes, the manifest records",
        ),
        (
            "grown",
            Box::new(|d| {
                let p = data_file(d);
                let mut b = std::fs::read(&p).unwrap();
                b.extend_from_slice(&[0u8; 10]);
                std::fs::write(&p, &b).unwrap();
            }),
            "bytes, the manifest records",
        ),
        (
            "manifest",
            Box::new(|d| {
                let p = std::fs::read_dir(d.join("_versions"))
                    .unwrap()
                    .flatten()
                    .map(|e| e.path())
                    .find(|p| p.extension().is_some_and(|e| e == "manifest"))
                    .unwrap();
                let b = std::fs::read(&p).unwrap();
                std::fs::write(&p, &b[..b.len() - 5]).unwrap();
            }),
            "version",
        ),
        (
            "deletion",
            Box::new(|d| {
                let p = std::fs::read_dir(d.join("_deletions"))
                    .unwrap()
                    .flatten()
                    .next()
                    .unwrap()
                    .path();
                std::fs::write(&p, b"garbage").unwrap();
            }),
            "fragment",
        ),
    ];
    for (name, damage, want) in damages {
        let d = base.join(name);
        copy_dir(&src, &d);
        damage(&d);
        let out = lancer().arg("verify").arg(&d).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{name}: verify should fail");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains(want), "{name}: {text}");
    }
}
