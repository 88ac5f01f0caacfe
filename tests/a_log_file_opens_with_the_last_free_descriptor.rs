//! Goal: a shard that opens its first segment file with the process's last
//! free file descriptor gets the file, not a panic. glommio reads the
//! device's block sizes from sysfs at a thread's first O_DIRECT open of a
//! device, which needs one more descriptor; upstream glommio panicked when
//! that read failed (EMFILE), taking the shard thread down. The vendored
//! copy (vendor/glommio/PATCHED.md) answers conservative values instead.
//!
//! Method: in a process of its own (this test binary holds only this test),
//! a glommio executor lowers the descriptor limit, takes every descriptor
//! but one, then opens a new DMA file for reading and writing, writes a
//! block and reads it back, as the broker's log does. Before the patch this test panicked in glommio's
//! sysfs code ("reading /sys/devices/.../queue/rotational (Too many open
//! files)").

use glommio::io::OpenOptions;
use glommio::{LocalExecutorBuilder, Placement};

/// Opens /dev/null until the process runs out of descriptors, then frees
/// one; returns what it holds.
fn take_all_descriptors_but_one() -> Vec<std::fs::File> {
    let mut held = Vec::new();
    loop {
        match std::fs::File::open("/dev/null") {
            Ok(file) => held.push(file),
            Err(error) if error.raw_os_error() == Some(libc::EMFILE) => break,
            Err(error) => panic!("cannot open /dev/null: {error}"),
        }
    }
    held.pop();
    held
}

#[test]
fn a_dma_file_opened_with_the_last_descriptor_works() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("00000000000000000000.log");
    let outcome = LocalExecutorBuilder::new(Placement::Unbound)
        .spawn(move || async move {
            // A low limit, so that running out takes a few hundred opens.
            let (_, hard) =
                nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
                    .expect("getrlimit");
            nix::sys::resource::setrlimit(
                nix::sys::resource::Resource::RLIMIT_NOFILE,
                512.min(hard),
                hard,
            )
            .expect("setrlimit");
            let held = take_all_descriptors_but_one();
            assert!(!held.is_empty(), "no descriptor was free to take");
            let file = OpenOptions::new()
                .create(true)
                .read(true)
                .write(true)
                .dma_open(&path)
                .await;
            // Free the descriptors before anything else needs one.
            drop(held);
            let file = file.map_err(|e| format!("create failed: {e}"))?;
            let mut buffer = file.alloc_dma_buffer(4096);
            buffer.as_bytes_mut().fill(0x5a);
            file.write_at(buffer, 0)
                .await
                .map_err(|e| format!("write failed: {e}"))?;
            let read = file
                .read_at_aligned(0, 4096)
                .await
                .map_err(|e| format!("read failed: {e}"))?;
            let all_written = read.iter().all(|&byte| byte == 0x5a) && read.len() == 4096;
            file.close()
                .await
                .map_err(|e| format!("close failed: {e}"))?;
            Ok::<bool, String>(all_written)
        })
        .expect("cannot start a glommio executor")
        .join();
    match outcome {
        Ok(Ok(all_written)) => assert!(all_written, "the block read back differs"),
        Ok(Err(error)) => panic!("{error}"),
        Err(error) => panic!("the executor thread failed (a panic in glommio?): {error:?}"),
    }
}
