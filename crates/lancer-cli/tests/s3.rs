//! Datasets on an S3-compatible server (moto's server mode, started by
//! `scripts/test.sh`, which exports `LANCER_S3_BUCKET` and the standard `AWS_*`
//! settings): what Lancer writes there pylance 14 reads, appends to and indexes the
//! same; what pylance writes Lancer reads; eight processes appending at once lose no
//! commit; a server that is down, drops requests or stops in the middle of a commit
//! leaves no half version and gives a clear error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{FixedSizeListArray, Float32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

use common::{json_ids, lancer, ok, py, pylance14, service, stdout, TempDir};

/// The bucket of the test server, or None (a failure under the test script).
fn bucket() -> Option<String> {
    service(
        "LANCER_S3_BUCKET",
        "LANCER_REQUIRE_PYLANCE",
        "the S3 test server",
    )
}

fn uri(bucket: &str, name: &str) -> String {
    format!("s3://{bucket}/{name}-{}", std::process::id())
}

/// `n` rows from `start` (id, name, a 16-d vector) as an Arrow IPC file.
fn rows_file(dir: &Path, name: &str, start: i64, n: usize) -> PathBuf {
    let ids: Vec<i64> = (start..start + n as i64).collect();
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
        Field::new("vec", DataType::FixedSizeList(item.clone(), 16), true),
    ]));
    let vals: Vec<f32> = ids
        .iter()
        .flat_map(|&i| {
            (0..16).map(move |k| ((i * 7_919 + k * 104_729) % 100_003) as f32 / 100_003.0)
        })
        .collect();
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("n{}", i % 13)),
            )),
            Arc::new(FixedSizeListArray::new(
                item,
                16,
                Arc::new(Float32Array::from(vals)),
                None,
            )),
        ],
    )
    .unwrap();
    let p = dir.join(name);
    let mut w = arrow_ipc::writer::FileWriter::try_new(std::fs::File::create(&p).unwrap(), &schema)
        .unwrap();
    w.write(&b).unwrap();
    w.finish().unwrap();
    p
}

fn tmp(name: &str) -> TempDir {
    TempDir::new(&format!("s3-{name}"))
}

/// The ids of every row of `ds` (read directly, through `lancer cat`), sorted.
fn sorted_ids(ds: &str) -> Vec<i64> {
    let mut ids = json_ids(&ok(lancer().args(["--json", "cat", ds, "--columns", "id"])));
    ids.sort_unstable();
    ids
}

/// The version numbers `lancer versions` lists for `ds`.
fn versions(ds: &str) -> Vec<u64> {
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&ok(lancer().args(["--json", "versions", ds])))).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .collect()
}

#[test]
fn s3_datasets_round_trip_with_pylance() {
    let Some(bucket) = bucket() else { return };
    let dir = tmp("round-trip");
    let ds = uri(&bucket, "round-trip");
    // Lancer writes: 4 fragments (streamed multipart uploads for none of them: small),
    // a delete, a BTREE and an IVF_FLAT index
    let input = rows_file(&dir, "a.arrow", 0, 1_000);
    ok(lancer()
        .args(["import", "--max-rows-per-file", "300"])
        .arg(&input)
        .arg(&ds));
    ok(lancer().args(["delete", &ds, "--where", "id % 10 = 3"]));
    ok(lancer().args(["index", "create", &ds, "--column", "id", "--type", "btree"]));
    ok(lancer().args([
        "index",
        "create",
        &ds,
        "--column",
        "vec",
        "--type",
        "ivf_flat",
        "--partitions",
        "4",
    ]));
    assert_eq!(stdout(&ok(lancer().args(["count", &ds]))), "900");
    let filtered = ok(lancer().args(["--json", "cat", &ds, "--filter", "id >= 500 AND id < 520"]));
    let want: Vec<i64> = (500..520).filter(|i| i % 10 != 3).collect();
    assert_eq!(json_ids(&filtered), want);
    let took = ok(lancer().args(["--json", "take", &ds, "0", "899", "450"]));
    assert_eq!(json_ids(&took), [0, 999, 500]);
    let search = |extra: &[&str]| {
        let mut c = lancer();
        c.args([
            "--json",
            "search",
            &ds,
            "--column",
            "vec",
            "--query-row",
            "7",
            "-k",
            "5",
        ]);
        json_ids(&ok(c.args(extra)))
    };
    let exact = search(&["--no-index"]);
    // row offset 7 is id 8 (id 3 is deleted)
    assert_eq!(exact[0], 8, "{exact:?}");
    // pylance 14 reads it, through the indexes too, then appends and tags
    let got = py(
        "import lance, sys\n\
         ds = lance.dataset(sys.argv[1])\n\
         t = ds.to_table(filter='id >= 500 AND id < 520')\n\
         q = ds.take([7], columns=['vec'])['vec'][0].as_py()\n\
         near = ds.to_table(nearest={'column': 'vec', 'q': q, 'k': 5, 'use_index': False})\n\
         print(ds.count_rows(), ds.version, sorted(t['id'].to_pylist()) == [i for i in range(500, 520) if i % 10 != 3], sorted(i['name'] for i in ds.list_indices()), near['id'].to_pylist())",
        &[&ds],
    );
    if !got.is_empty() {
        let version: u64 = stdout(&ok(lancer().args(["--json", "inspect", &ds])))
            .parse::<serde_json::Value>()
            .unwrap()["version"]
            .as_u64()
            .unwrap();
        assert_eq!(
            got,
            format!("900 {version} True ['id_idx', 'vec_idx'] {exact:?}"),
            "pylance's read of Lancer's S3 dataset"
        );
        py(
            "import lance, sys, pyarrow as pa\n\
             ds = lance.dataset(sys.argv[1])\n\
             t = ds.to_table(limit=10)\n\
             t = t.set_column(0, 'id', pa.array(range(5000, 5010), pa.int64()))\n\
             ds = lance.write_dataset(t, sys.argv[1], mode='append')\n\
             ds.tags.create('after-append', ds.version)",
            &[&ds],
        );
        assert_eq!(stdout(&ok(lancer().args(["count", &ds]))), "910");
        assert_eq!(
            stdout(&ok(lancer().args(["count", &ds, "--tag", "after-append"]))),
            "910"
        );
        let appended = ok(lancer().args(["--json", "cat", &ds, "--filter", "id >= 5000"]));
        assert_eq!(json_ids(&appended), (5000..5010).collect::<Vec<_>>());
    }
    // every version verifies; cleanup of old versions keeps the tagged one
    ok(lancer().args(["verify", &ds]));
}

/// A dataset pylance 14 writes to S3 (with deletions and an index) reads identically
/// in Lancer.
#[test]
fn pylance_s3_datasets_read_in_lancer() {
    let Some(bucket) = bucket() else { return };
    if pylance14().is_none() {
        return;
    }
    let ds = uri(&bucket, "from-pylance");
    py(
        "import lance, sys, pyarrow as pa\n\
         t = pa.table({'id': pa.array(range(2000), pa.int64()), 's': [f'v{i % 7}' for i in range(2000)]})\n\
         ds = lance.write_dataset(t, sys.argv[1], max_rows_per_file=500, data_storage_version='2.1')\n\
         ds.delete('id % 4 = 1')\n\
         ds.create_scalar_index('id', 'BTREE')",
        &[&ds],
    );
    assert_eq!(stdout(&ok(lancer().args(["count", &ds]))), "1500");
    let out = ok(lancer().args(["--json", "cat", &ds, "--filter", "id BETWEEN 100 AND 110"]));
    let want: Vec<i64> = (100..=110).filter(|i| i % 4 != 1).collect();
    assert_eq!(json_ids(&out), want);
    let n = stdout(&ok(lancer().args(["count", &ds, "--filter", "s = 'v3'"])));
    let want = (0..2000).filter(|i| i % 4 != 1 && i % 7 == 3).count();
    assert_eq!(n, want.to_string());
    // a full scan fetches each fragment's rows ahead in one request beside its file's
    // tail and deletion file: a listing and the manifest, then at most 3 per fragment
    // (it was one per column and page)
    let all = ok(lancer().args(["--stats", "--json", "cat", &ds]));
    let want: Vec<i64> = (0..2000).filter(|i| i % 4 != 1).collect();
    assert_eq!(json_ids(&all), want);
    let n = requests(&all);
    assert!(n <= 2 + 3 * 4, "full scan: {n} requests");
}

/// The request count `lancer --stats` printed.
fn requests(out: &std::process::Output) -> u64 {
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines()
        .find_map(|l| l.strip_prefix("storage: "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no request count in {err}"))
}

/// Eight processes append to one S3 dataset at once, three commits each: every commit
/// lands (conditional puts; a lost race rebases), every version reads.
#[test]
fn eight_processes_commit_to_one_s3_dataset() {
    let Some(bucket) = bucket() else { return };
    let dir = tmp("eight");
    let ds = uri(&bucket, "eight");
    let base = rows_file(&dir, "base.arrow", 0, 100);
    ok(lancer().arg("import").arg(&base).arg(&ds));
    let inputs: Vec<Vec<PathBuf>> = (0..8)
        .map(|w| {
            (0..3)
                .map(|k| rows_file(&dir, &format!("w{w}-{k}.arrow"), 1_000 * (w * 3 + k + 1), 7))
                .collect()
        })
        .collect();
    std::thread::scope(|s| {
        for files in &inputs {
            let ds = &ds;
            s.spawn(move || {
                for f in files {
                    ok(lancer().args(["import", "--mode", "append"]).arg(f).arg(ds));
                }
            });
        }
    });
    let vs = versions(&ds);
    assert_eq!(
        vs,
        (1..=25).collect::<Vec<_>>(),
        "one version per commit, none lost"
    );
    assert_eq!(stdout(&ok(lancer().args(["count", &ds]))), "268");
    for v in [1u64, 9, 17, 25] {
        ok(lancer().args(["count", &ds, "--version", &v.to_string()]));
    }
    let mut got = sorted_ids(&ds);
    got.dedup();
    assert_eq!(got.len(), 268, "every appended row once");
}

/// A server nobody answers at: the command fails quickly (retries bounded by
/// client_max_retries) with an error naming the endpoint; nothing is committed.
#[test]
fn an_unreachable_server_fails_clearly() {
    let Some(bucket) = bucket() else { return };
    let dir = tmp("down");
    let input = rows_file(&dir, "a.arrow", 0, 10);
    let ds = uri(&bucket, "down");
    let t = std::time::Instant::now();
    let out = lancer()
        .args([
            "--storage-option",
            "endpoint=http://127.0.0.1:9",
            "--storage-option",
            "client_max_retries=1",
            "import",
        ])
        .arg(&input)
        .arg(&ds)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("127.0.0.1:9"), "{err}");
    assert!(t.elapsed().as_secs() < 30, "{:?}", t.elapsed());
    let none = lancer().args(["count", &ds]).output().unwrap();
    assert_eq!(
        none.status.code(),
        Some(1),
        "nothing committed on the real server"
    );
}

/// A TCP proxy to the S3 server that drops connections at random: a fifth before the
/// request reaches the server, a tenth after the server answered but before the answer
/// reaches the client (the client cannot tell whether a put landed). Returns its
/// endpoint; it runs until the test process ends.
fn faulty_proxy(target: &str) -> String {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let target = target.trim_start_matches("http://").to_string();
    std::thread::spawn(move || {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for conn in listener.incoming() {
            let Ok(client) = conn else { continue };
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let roll = seed % 100;
            if roll < 20 {
                drop(client); // never reaches the server
                continue;
            }
            let drop_answer = roll < 30;
            let target = target.clone();
            std::thread::spawn(move || {
                let Ok(server) = TcpStream::connect(&target) else {
                    return;
                };
                let (mut c_in, mut s_out) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                let up = std::thread::spawn(move || {
                    let mut buf = [0u8; 64 * 1024];
                    while let Ok(n) = c_in.read(&mut buf) {
                        if n == 0 || s_out.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = s_out.shutdown(std::net::Shutdown::Write);
                });
                let (mut s_in, mut c_out) = (server, client);
                let mut buf = [0u8; 64 * 1024];
                while let Ok(n) = s_in.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if drop_answer {
                        // the server acted; the client hears nothing
                        let _ = c_out.shutdown(std::net::Shutdown::Both);
                        break;
                    }
                    if c_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = c_out.shutdown(std::net::Shutdown::Both);
                let _ = up.join();
            });
        }
    });
    format!("http://{addr}")
}

/// Commits through a connection-dropping proxy: four processes, three appends each,
/// every one lands exactly once (retries, and conditional puts of unknown outcome read
/// back), no version is half written, and pylance reads the result.
#[test]
fn dropped_requests_lose_or_duplicate_nothing() {
    let Some(bucket) = bucket() else { return };
    let Ok(endpoint) = std::env::var("AWS_ENDPOINT") else {
        return;
    };
    let proxy = faulty_proxy(&endpoint);
    let dir = tmp("faults");
    let ds = uri(&bucket, "faults");
    let base = rows_file(&dir, "base.arrow", 0, 50);
    ok(lancer().arg("import").arg(&base).arg(&ds));
    let via_proxy = ["--storage-option", &format!("endpoint={proxy}")];
    let inputs: Vec<Vec<PathBuf>> = (0..4)
        .map(|w| {
            (0..3)
                .map(|k| rows_file(&dir, &format!("f{w}-{k}.arrow"), 1_000 * (w * 3 + k + 1), 5))
                .collect()
        })
        .collect();
    std::thread::scope(|s| {
        for files in &inputs {
            let (ds, via_proxy) = (&ds, &via_proxy);
            s.spawn(move || {
                for f in files {
                    ok(lancer()
                        .args(via_proxy)
                        .args(["import", "--mode", "append"])
                        .arg(f)
                        .arg(ds));
                }
            });
        }
    });
    // read directly: 13 versions, each readable, every row once
    let vs = versions(&ds);
    assert_eq!(vs, (1..=13).collect::<Vec<_>>(), "one version per commit");
    ok(lancer().args(["verify", &ds]));
    let got = sorted_ids(&ds);
    let mut want: Vec<i64> = (0..50).collect();
    for w in 0..4 {
        for k in 0..3 {
            let start = 1_000 * (w * 3 + k + 1);
            want.extend(start..start + 5);
        }
    }
    want.sort_unstable();
    assert_eq!(got, want);
    let n = py(
        "import lance, sys\nprint(lance.dataset(sys.argv[1]).count_rows())",
        &[&ds],
    );
    if !n.is_empty() {
        assert_eq!(n, "110");
    }
}

/// Bytes of the first whole HTTP/1.1 request in `buf` (headers, then a body by
/// Content-Length or chunked), or None while it is incomplete.
fn request_len(buf: &[u8]) -> Option<usize> {
    let head = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let headers = String::from_utf8_lossy(&buf[..head]).to_ascii_lowercase();
    let header = |name: &str| {
        headers
            .lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
    };
    if header("transfer-encoding:").is_some_and(|v| v.contains("chunked")) {
        let mut at = head;
        loop {
            let line = buf[at..].windows(2).position(|w| w == b"\r\n")? + at;
            let size_text = String::from_utf8_lossy(&buf[at..line]).to_string();
            let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
            at = line + 2 + size + 2;
            if size == 0 {
                return (buf.len() >= at).then_some(at);
            }
            if buf.len() < at {
                return None;
            }
        }
    }
    let body: usize = header("content-length:").map_or(Some(0), |v| v.parse().ok())?;
    (buf.len() >= head + body).then_some(head + body)
}

/// A TCP proxy to the S3 server that forwards the first `forward` requests (counted
/// across all connections) and then stops as a server going down does: the next
/// request is cut off unanswered, connections in use are closed, new ones dropped.
fn stopping_proxy(target: &str, forward: usize) -> String {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let target = target.trim_start_matches("http://").to_string();
    let seen = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(client) = conn else { continue };
            if seen.load(SeqCst) >= forward {
                drop(client); // the server is down
                continue;
            }
            let (target, seen) = (target.clone(), seen.clone());
            std::thread::spawn(move || {
                let Ok(server) = TcpStream::connect(&target) else {
                    return;
                };
                let (mut s_in, mut c_out) =
                    (server.try_clone().unwrap(), client.try_clone().unwrap());
                let down = std::thread::spawn(move || {
                    let _ = std::io::copy(&mut s_in, &mut c_out);
                    let _ = c_out.shutdown(Shutdown::Both);
                });
                let (mut c_in, mut s_out) = (client, server);
                let mut buf = Vec::new();
                let mut chunk = [0u8; 64 * 1024];
                loop {
                    if let Some(len) = request_len(&buf) {
                        if seen.fetch_add(1, SeqCst) >= forward {
                            break; // stopped: this request never arrives
                        }
                        if s_out.write_all(&buf[..len]).is_err() {
                            break;
                        }
                        buf.drain(..len);
                        continue;
                    }
                    match c_in.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let _ = s_out.shutdown(Shutdown::Both);
                let _ = c_in.shutdown(Shutdown::Both);
                let _ = down.join();
            });
        }
    });
    format!("http://{addr}")
}

#[test]
fn request_framing_for_the_stopping_proxy() {
    let get = b"GET /b/k HTTP/1.1\r\nhost: x\r\n\r\nPUT";
    assert_eq!(request_len(get), Some(get.len() - 3));
    let put = b"PUT /b/k HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
    assert_eq!(request_len(put), Some(put.len()));
    assert_eq!(request_len(&put[..put.len() - 1]), None);
    let chunked = b"PUT /k HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    assert_eq!(request_len(chunked), Some(chunked.len()));
    assert_eq!(request_len(&chunked[..chunked.len() - 2]), None);
    assert_eq!(request_len(b"GET / HTTP/1.1\r\n"), None);
}

/// The server stops after each possible number of requests of an append (listing,
/// manifest reads, data file puts, the manifest's conditional put, ...): every stopped
/// append fails with exit code 1 and an error naming the endpoint, and the dataset read
/// directly afterwards is at the version before with its rows, or — when the stop came
/// after the manifest landed — at the next one with every appended row; never between.
/// Once the server is back, appends go on; pylance reads the result.
#[test]
fn a_server_stopping_mid_commit_leaves_a_whole_version() {
    let Some(bucket) = bucket() else { return };
    let Ok(endpoint) = std::env::var("AWS_ENDPOINT") else {
        return;
    };
    let dir = tmp("stop");
    let ds = uri(&bucket, "stop");
    ok(lancer()
        .arg("import")
        .arg(rows_file(&dir, "base.arrow", 0, 20))
        .arg(&ds));
    let mut want: Vec<i64> = (0..20).collect();
    let mut completed = None;
    for forward in 0..40usize {
        let start = 1_000 * (forward as i64 + 1);
        let input = rows_file(&dir, &format!("a{forward}.arrow"), start, 5);
        let proxy = stopping_proxy(&endpoint, forward);
        let before = versions(&ds);
        let out = lancer()
            .args(["--storage-option", &format!("endpoint={proxy}")])
            .args(["--storage-option", "client_max_retries=1"])
            .args(["import", "--mode", "append"])
            .arg(&input)
            .arg(&ds)
            .output()
            .unwrap();
        let after = versions(&ds);
        let last = *before.last().unwrap();
        let got = sorted_ids(&ds);
        if after.last() == Some(&(last + 1)) {
            want.extend(start..start + 5);
            want.sort_unstable();
        } else {
            assert_eq!(
                after, before,
                "stopped after {forward} requests: no version added"
            );
        }
        assert_eq!(
            got, want,
            "stopped after {forward} requests: whole versions only"
        );
        ok(lancer().args(["verify", &ds]));
        if out.status.success() {
            assert_eq!(
                after.last(),
                Some(&(last + 1)),
                "a successful append commits"
            );
            completed = Some(forward);
            break;
        }
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "stopped after {forward}: {err}");
        assert!(
            err.contains(proxy.trim_start_matches("http://")),
            "the error names the endpoint: {err}"
        );
    }
    let completed = completed.expect("an append completes once the server stops no more");
    assert!(
        completed >= 3,
        "an append takes several requests; it completed with {completed}"
    );
    // the server back: an append lands on top of whatever the stops left, in six
    // requests (listing, manifest, data file, listing for commits since, transaction,
    // manifest: the one read at open is the commit's base, not read again)
    let out = ok(lancer()
        .args(["--stats", "import", "--mode", "append"])
        .arg(rows_file(&dir, "after.arrow", 900_000, 5))
        .arg(&ds));
    assert_eq!(
        requests(&out),
        6,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    want.extend(900_000..900_005);
    let n = py(
        "import lance, sys\nprint(lance.dataset(sys.argv[1]).count_rows())",
        &[&ds],
    );
    if !n.is_empty() {
        assert_eq!(n, want.len().to_string());
    }
}

/// A two-phase write on S3 (issue 43): two Lancer workers write fragments, a pylance 14
/// worker a third batch while another pylance process appends; the Lancer driver
/// commits the workers' JSON (an overwrite, then an append read at version 1, rebased
/// over pylance's append); pylance reads every row once.
#[test]
fn two_phase_write_on_s3() {
    let Some(bucket) = bucket() else { return };
    let dir = tmp("two-phase");
    let ds = uri(&bucket, "two-phase");
    let worker = |input: &Path, mode: &str| {
        stdout(&ok(lancer()
            .args([
                "write-fragments",
                "--mode",
                mode,
                "--max-rows-per-file",
                "150",
            ])
            .arg(input)
            .arg(&ds)))
    };
    let a = worker(&rows_file(&dir, "a.arrow", 0, 200), "create");
    let b = worker(&rows_file(&dir, "b.arrow", 200, 100), "create");
    // nothing committed yet
    assert!(
        lancer()
            .args(["count", &ds])
            .output()
            .unwrap()
            .status
            .code()
            != Some(0)
    );
    let frags = dir.join("frags.json");
    std::fs::write(&frags, format!("{a}\n{b}\n")).unwrap();
    ok(lancer().args(["commit", &ds, "--overwrite"]).arg(&frags));
    assert_eq!(versions(&ds), [1]);
    let c = worker(&rows_file(&dir, "c.arrow", 1_000, 50), "append");
    let mut appended = 0;
    if pylance14().is_some() {
        // a pylance worker's fragments join the driver's list; another writer appends
        let theirs = py(
            "import json, sys, lance, pyarrow as pa\n\
             from lance.fragment import write_fragments\n\
             ds = lance.dataset(sys.argv[1])\n\
             t = ds.to_table(limit=20)\n\
             t = t.set_column(0, 'id', pa.array(range(2000, 2020), pa.int64()))\n\
             frags = write_fragments(t, sys.argv[1])\n\
             lance.write_dataset(t.set_column(0, 'id', pa.array(range(3000, 3020), pa.int64())), sys.argv[1], mode='append')\n\
             print(json.dumps([f.to_json() for f in frags]))",
            &[&ds],
        );
        std::fs::write(&frags, format!("{c}\n{theirs}\n")).unwrap();
        appended = 40;
    } else {
        std::fs::write(&frags, &c).unwrap();
    }
    ok(lancer()
        .args(["commit", &ds, "--append"])
        .arg(&frags)
        .args(["--read-version", "1"]));
    let ids = sorted_ids(&ds);
    assert_eq!(ids.len(), 350 + appended);
    assert_eq!(ids[..300], (0..300).collect::<Vec<_>>()[..]);
    assert_eq!(ids[300..350], (1_000..1_050).collect::<Vec<_>>()[..]);
    if appended > 0 {
        assert_eq!(versions(&ds), [1, 2, 3]);
        assert_eq!(
            py(
                "import lance, sys\n\
                 ds = lance.dataset(sys.argv[1])\n\
                 ids = sorted(ds.to_table(columns=['id'])['id'].to_pylist())\n\
                 print(ds.version, len(ids), ids[300:303], ids[-21:-18], ids[-1])",
                &[&ds],
            ),
            "3 390 [1000, 1001, 1002] [2019, 3000, 3001] 3019"
        );
    }
}

/// The bytes read that `lancer --stats` printed.
fn bytes_read(out: &std::process::Output) -> u64 {
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines()
        .find_map(|l| l.strip_prefix("storage: "))
        .and_then(|l| l.split(" reads (").nth(1))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no byte count in {err}"))
}

/// Blob v2 columns on S3 (issue 44): files imported into a blob column, pylance 14
/// reads their sizes; a 64 KiB range of a 6 MiB dedicated blob and of a 1 MiB packed one
/// reads the range plus metadata, not the payload.
#[test]
fn blob_ranges_on_s3_read_only_the_bytes_asked() {
    let Some(bucket) = bucket() else { return };
    let dir = tmp("blobs");
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let sizes = [100usize, 1 << 20, 6 << 20, 0];
    for (k, n) in sizes.iter().enumerate() {
        let bytes: Vec<u8> = (0..*n)
            .map(|i| (i as u8).wrapping_mul(7).wrapping_add(k as u8))
            .collect();
        std::fs::write(files.join(format!("f{k}.bin")), bytes).unwrap();
    }
    let ds = uri(&bucket, "blobs");
    ok(lancer().args([
        "import-files",
        files.to_str().unwrap(),
        &ds,
        "--column",
        "b",
    ]));
    let got = py(
        "import sys, lance\nt = lance.dataset(sys.argv[1]).to_table(blob_handling='all_binary')\nprint([len(v) for v in t['b'].to_pylist()])",
        &[&ds],
    );
    if pylance14().is_some() {
        assert_eq!(got, format!("{:?}", sizes));
    }
    for (row, size) in [(1usize, 1usize << 20), (2, 6 << 20)] {
        let out = ok(lancer().args([
            "--stats",
            "blob",
            "get",
            &ds,
            "--column",
            "b",
            "--row",
            &row.to_string(),
            "--range",
            "100000..165536",
        ]));
        assert_eq!(out.stdout.len(), 65536);
        let want: Vec<u8> = (100_000..165_536usize)
            .map(|i| (i as u8).wrapping_mul(7).wrapping_add(row as u8))
            .collect();
        assert_eq!(out.stdout, want);
        let read = bytes_read(&out);
        // the range, the manifest and the data file's footer / descriptor page: far
        // less than the payload
        assert!(
            read < 65_536 + 256 * 1024 && (read as usize) < size,
            "row {row}: {read} bytes read"
        );
    }
}
