#!/usr/bin/env node
// A "browser" for tests (BROWSER="node tests/servers/fake_browser.mjs"):
// loads the URL it is given and follows its redirects, as the browser of a
// person who is already signed in and approves would, ending at mcpscope's
// loopback listener.
//
// FAKE_BROWSER_TAMPER=state: the redirect back to mcpscope carries another
// state (what a forged redirect, a CSRF, looks like to the listener).
const tamper = process.env.FAKE_BROWSER_TAMPER;
let url = process.argv[2];
for (let hops = 0; hops < 20; hops++) {
  const response = await fetch(url, { redirect: "manual" });
  await response.text();
  const location = response.headers.get("location");
  if (response.status < 300 || response.status >= 400 || !location) break;
  const next = new URL(location, url);
  if (tamper === "state" && next.pathname === "/callback" && next.searchParams.has("state")) {
    next.searchParams.set("state", "tampered-by-the-test");
  }
  url = next.toString();
}
