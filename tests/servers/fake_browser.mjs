#!/usr/bin/env node
// A "browser" for tests (BROWSER="node tests/servers/fake_browser.mjs"):
// loads the URL it is given and follows its redirects, as the browser of a
// person who is already signed in and approves would, ending at mcpscope's
// loopback listener.
const response = await fetch(process.argv[2], { redirect: "follow" });
await response.text();
