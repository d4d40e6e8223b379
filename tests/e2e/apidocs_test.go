package e2e

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chromiumPath is Debian's Chromium, which .ci/run installs; CHORUS_CHROMIUM names another.
func chromiumPath() string {
	if p := os.Getenv("CHORUS_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// The API reference works in a real browser: headless Chromium loads /docs from a running
// stack, runs the embedded Swagger UI on /openapi.json under the page's
// Content-Security-Policy, and the rendered DOM lists the campaigns operations. A missing
// Chromium fails the test rather than skipping it.
func TestAPIReferenceInABrowser(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("this test drives headless Chromium at %s, which is missing (%v): install it (Debian: apt-get install chromium, as .ci/run does) or set CHORUS_CHROMIUM", chromium, err)
	}
	e := newEnv(t, nil)

	// The page as the contract declares it (the client validates the answer).
	res, err := e.http.Get(e.st.HTTPURL + "/docs")
	require.NoError(t, err)
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Contains(t, string(page), `<div id="swagger-ui">`)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The flags keep Chromium off the network but for the page (this machine has none) and
	// give the page 15 s of virtual time to fetch the document and render before the dump. The
	// fragment deep-links to POST /api/campaigns, which Swagger UI then renders expanded.
	cmd := exec.CommandContext(ctx, chromium,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--disable-extensions", "--user-data-dir="+t.TempDir(),
		"--enable-logging=stderr", "--v=0",
		"--virtual-time-budget=15000", "--dump-dom", e.st.HTTPURL+"/docs#/CampaignsService/CampaignsService_CreateCampaign")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	dom := stdout.String()
	t.Logf("chromium rendered %d bytes of DOM in %s", len(dom), time.Since(start).Round(time.Millisecond))
	if err != nil || !strings.Contains(dom, "CampaignsService_ListCampaigns") {
		t.Logf("chromium stderr:\n%s", stderr.String())
		t.Logf("DOM (first 4 KB):\n%.4096s", dom)
	}
	require.NoError(t, err, "chromium")

	// Swagger UI loaded the document (its title is on the page) and nothing was blocked by the
	// page's Content-Security-Policy or failed in a script (Chromium logs the console).
	assert.Contains(t, dom, `<h1 class="title">Chorus REST API`)
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") && (strings.Contains(line, "Content Security Policy") ||
			strings.Contains(line, "Refused to") || strings.Contains(line, "Uncaught")) {
			t.Errorf("in the browser's console: %s", line)
		}
	}
	// Each campaigns operation is rendered under its tag with its method, path and summary.
	for _, op := range []struct{ id, method, path, summary string }{
		{"CreateCampaign", "post", "/api/campaigns", "CreateCampaign creates (or promotes a draft) and submits it, or schedules it."},
		{"ListCampaigns", "get", "/api/campaigns", "ListCampaigns lists the organization"},
		{"GetCampaign", "get", "/api/campaigns/{id}", "GetCampaign returns one campaign"},
		{"PauseCampaign", "post", "/api/campaigns/{id}/pause", "PauseCampaign stops handing the campaign"},
	} {
		block := opblock(dom, "operations-CampaignsService-CampaignsService_"+op.id)
		if block == "" {
			t.Errorf("no operation block for %s %s (%s) on the page", strings.ToUpper(op.method), op.path, op.id)
			continue
		}
		assert.True(t, strings.HasPrefix(block, `<div class="opblock opblock-`+op.method), "%s is a %s: %.200s", op.id, op.method, block)
		assert.Contains(t, block, `data-path="`+op.path+`"`, op.id)
		assert.Contains(t, block, `<div class="opblock-summary-description">`+op.summary, op.id)
	}
	// The deep-linked operation is open, with its request body and responses.
	created := opblock(dom, "operations-CampaignsService-CampaignsService_CreateCampaign")
	assert.Contains(t, created, `aria-expanded="true"`)
	assert.Contains(t, created, `>Request body</h4>`)
	assert.Contains(t, created, `>Responses</h4>`)
}

// opblock returns the rendered block of the operation with the element id, from its opening
// tag to the next operation's, or "" when the page has none.
func opblock(dom, id string) string {
	at := strings.Index(dom, `id="`+id+`"`)
	if at < 0 {
		return ""
	}
	start := strings.LastIndex(dom[:at], "<div ")
	rest := dom[start:]
	if end := strings.Index(rest[1:], `<div class="opblock opblock-`); end >= 0 {
		return rest[:end+1]
	}
	return rest
}
