package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/registry"
)

// walkthroughBlocks are the ```sh blocks of the README's "## Walk-through" section (up to the
// next "## " heading), in order.
func walkthroughBlocks(t *testing.T, readme string) []string {
	t.Helper()
	f, err := os.Open(readme)
	require.NoError(t, err)
	defer f.Close()
	var blocks []string
	var block strings.Builder
	inSection, inBlock := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case inBlock && line == "```":
			blocks = append(blocks, block.String())
			block.Reset()
			inBlock = false
		case inBlock:
			block.WriteString(line + "\n")
		case strings.HasPrefix(line, "## "):
			inSection = line == "## Walk-through"
		case inSection && line == "```sh":
			inBlock = true
		}
	}
	require.NoError(t, sc.Err())
	require.False(t, inBlock, "README: a walk-through block is not closed")
	return blocks
}

// TestReadmeWalkthrough runs the README's walk-through, every block in one bash -euo pipefail
// as a reader pastes them, against a stack of its own, with bin/chorusctl built from this tree
// and the environment chorusctl reads pointing at that stack. The blocks check their own
// answers (api's expected status, ok's jq checks, wait_until), so a wrong answer fails here.
func TestReadmeWalkthrough(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's walk-through needs %s (a prerequisite; .ci/run installs jq): %v", tool, err)
		}
	}
	blocks := walkthroughBlocks(t, filepath.Join("..", "..", "README.md"))
	require.GreaterOrEqual(t, len(blocks), 6, "README: the walk-through's sh blocks")
	script := strings.Join(blocks, "\n")
	for _, want := range []string{"chorusctl sandbox inbound", "/api/campaigns", "/api/polls", "/api/analytics/export", "/api/contacts/imports", "/api/webhooks"} {
		require.Contains(t, script, want, "README: the walk-through covers it")
	}

	dir := t.TempDir()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	build := exec.Command(goBin, "build", "-o", filepath.Join(dir, "bin", "chorusctl"), "github.com/chorus-sms/chorus/cmd/chorusctl")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build chorusctl: %s", out)

	devKey := filepath.Join(dir, "dev-key.pem")
	e := newEnv(t, map[string]string{"CHORUS_DEV_KEY": devKey})

	// The reader's environment without any CHORUS_* variable of theirs, then the test stack's.
	var environ []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHORUS_") {
			environ = append(environ, kv)
		}
	}
	for _, svc := range registry.All {
		environ = append(environ, svc.AddrVar+"="+e.st.Addr(svc)) // the gateway's is CHORUS_HTTP_ADDR
	}
	environ = append(environ,
		"CHORUS_PUBLIC_URL="+e.st.PublicURL,
		"CHORUS_DEV_KEY="+devKey,
		"CHORUS_SANDBOX_AUTH_TOKEN="+e.sandboxToken,
	)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	run.Dir, run.Env = dir, environ
	started := time.Now()
	out, err = run.CombinedOutput()
	if err != nil {
		t.Fatalf("README walk-through failed after %s: %v\n--- output ---\n%s", time.Since(started).Round(time.Millisecond), err, out)
	}
	t.Logf("README walk-through passed in %s\n%s", time.Since(started).Round(time.Millisecond), out)
}
