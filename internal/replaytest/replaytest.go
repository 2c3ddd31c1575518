// Package replaytest replays web archives in ReplayWeb.page (wabac.js) in
// Debian's headless Chromium, for tests that must see what a reader of the
// archive sees. It starts, on 127.0.0.1 only:
//
//   - a test server with Range support, serving ReplayWeb.page's
//     index.html, sw.js and ui.js at / and a directory of archive files
//     under /warcs/;
//   - a proxy that refuses every request, through which Chromium must send
//     everything not for 127.0.0.1, so that nothing leaves the machine
//     (Chromium reaches for outside services even with background
//     networking off); what it was asked for is kept (Browser.Refused);
//   - Chromium, headless, with a fresh profile;
//   - driver.js under node, which drives Chromium through puppeteer-core.
//
// Every process is stopped when the test ends, failed or not.
//
// StartPages starts only the proxy, Chromium and the driver, for tests of
// pages that must stand alone (a report.html opened as a file): they
// count what the page asked for, its console messages, and take
// screenshots (Browser.OpenFile).
//
// The browser, node, puppeteer-core and ReplayWeb.page are found as
// scripts/replay-setup.sh installs them: Chromium at /usr/bin/chromium (or
// $WARCDEDUP_CHROMIUM), puppeteer-core and the unpacked replaywebpage
// package under .cache/replay of the module (or $WARCDEDUP_REPLAY_DIR).
// Without them tests skip, unless WARCDEDUP_REQUIRE_BROWSER=1 (as .ci/run
// sets), when they fail.
package replaytest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RWPVersion is the ReplayWeb.page release the tests replay in; its
// wabac.js is the one the package ships.
const RWPVersion = "2.5.3"

// Setup is where the parts of a replay were found.
type Setup struct {
	Chromium string // the chromium command
	Node     string // the node command
	Modules  string // node_modules holding puppeteer-core
	RWP      string // the unpacked replaywebpage package
}

// Find locates the parts, or says which is missing and how to install it.
func Find() (Setup, error) { return find(true) }

// find locates Chromium, node and puppeteer-core, and ReplayWeb.page when
// rwp is true.
func find(rwp bool) (Setup, error) {
	var s Setup
	var missing []string
	s.Chromium = os.Getenv("WARCDEDUP_CHROMIUM")
	if s.Chromium == "" {
		s.Chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(s.Chromium); err != nil {
		missing = append(missing, "Debian chromium ("+s.Chromium+")")
	}
	if p, err := exec.LookPath("node"); err == nil {
		s.Node = p
	} else {
		missing = append(missing, "node")
	}
	dir := os.Getenv("WARCDEDUP_REPLAY_DIR")
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return s, err
		}
		dir = filepath.Join(root, ".cache", "replay")
	}
	s.Modules = filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(s.Modules, "puppeteer-core", "package.json")); err != nil {
		missing = append(missing, "puppeteer-core in "+s.Modules)
	}
	if rwp {
		s.RWP = filepath.Join(dir, "replaywebpage-"+RWPVersion)
		for _, f := range []string{"index.html", "sw.js", "ui.js"} {
			if _, err := os.Stat(filepath.Join(s.RWP, f)); err != nil {
				missing = append(missing, "replaywebpage "+RWPVersion+" in "+s.RWP)
				break
			}
		}
	}
	if len(missing) > 0 {
		return s, fmt.Errorf("not installed (scripts/replay-setup.sh installs them): %s", strings.Join(missing, ", "))
	}
	return s, nil
}

// need returns the set-up (with ReplayWeb.page when rwp is true), or skips
// the test (fails it when the environment requires the browser).
func need(t testing.TB, rwp bool) Setup {
	t.Helper()
	s, err := find(rwp)
	if err != nil {
		if os.Getenv("WARCDEDUP_REQUIRE_BROWSER") == "1" {
			t.Fatalf("the replay browser is required (WARCDEDUP_REQUIRE_BROWSER=1): %v", err)
		}
		t.Skipf("replay browser: %v", err)
	}
	return s
}

// moduleRoot is the directory of the go.mod above the working directory
// (a test runs in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("replaytest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// CollectionID is the id ReplayWeb.page gives the collection it loads from
// source: "id-" and the first 12 hex digits of the SHA-256 of the source's
// absolute URL.
func CollectionID(source string) string {
	if u, err := url.Parse(source); err == nil {
		source = u.String()
	}
	sum := sha256.Sum256([]byte(source))
	return "id-" + hex.EncodeToString(sum[:])[:12]
}
