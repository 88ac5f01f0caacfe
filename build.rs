//! Lists the crate's modules (every `src/**/*.rs` but the entry points and
//! test modules) as log targets, for the broker loggers that DescribeConfigs
//! shows and IncrementalAlterConfigs changes (`runtime::logging`).

use std::path::Path;

fn modules(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            modules(&path, &format!("{prefix}::{name}"), out);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            match stem {
                "main" | "lib" | "tests" => {}
                "mod" => out.push(prefix.to_string()),
                _ => out.push(format!("{prefix}::{stem}")),
            }
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=src");
    let mut list = vec!["ringbroker".to_string()];
    modules(Path::new("src"), "ringbroker", &mut list);
    list.sort();
    list.dedup();
    let body: String = list.iter().map(|m| format!("    {m:?},\n")).collect();
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out).join("modules.rs"), format!("&[\n{body}]\n"))
        .expect("write the module list");
}
