package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/servetest"
)

// The polls service runs in a process of its own, SIGKILLed at a random moment after each
// round of answers (between a reply and its next question, while replies are read, while
// steps are sent) and restarted, while the rest of the stack stays up. Every participant still
// gets each question exactly once, in order, every answer is stored once, and all complete.
func TestPollSurvivesKilledProcess(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	shared := map[string]string{
		"CHORUS_POLLS_ADDR":   servetest.ClosedAddr(t),
		"CHORUS_DATABASE_URL": stackDB.NewDatabase(t),
	}
	shared["CHORUS_REDIS_URL"], _ = redistest.New(t)
	local := map[string]string{"CHORUS_STACK_SERVICES": "orgs,contacts,billing,messaging,campaigns,gateway"}
	for k, v := range shared {
		local[k] = v
	}
	e := newMsgEnv(t, local)
	vars := []string{childEnv + "=1", "CHORUS_STACK_SERVICES=polls"}
	for k, v := range shared {
		vars = append(vars, k+"="+v)
	}
	for _, peer := range []registry.Service{registry.Orgs, registry.Contacts, registry.Billing, registry.Messaging} {
		vars = append(vars, peer.AddrVar+"="+e.st.Addr(peer))
	}
	proc := &child{t: t, vars: vars}
	proc.start()
	t.Cleanup(proc.kill)
	db, err := pgxpool.New(context.Background(), shared["CHORUS_DATABASE_URL"])
	require.NoError(t, err)
	t.Cleanup(db.Close)

	tn := e.newTenant("+13125550190", 500)
	var phones []string
	for i := range 8 {
		phones = append(phones, fmt.Sprintf("+1202555%04d", 4100+i))
	}
	tn.contacts("fault", phones)
	const rounds = 4
	body := map[string]any{"name": "Fault poll", "timezone": zoneWhere(12), "outroText": "Done, thanks"}
	var qs []map[string]any
	for n := 1; n <= rounds; n++ {
		qs = append(qs, map[string]any{"questionNumber": n, "text": fmt.Sprintf("Question %d?", n), "type": "open_ended", "responseCode": fmt.Sprintf("q%d", n)})
	}
	body["questions"] = qs
	id := tn.createPoll(body)["id"].(string)
	tn.startPoll(id, "fault")
	for _, p := range phones {
		tn.awaitAsked(p, 1)
	}

	want := func(n int) []string { // what a participant has been sent after n answers
		out := []string{}
		for q := 1; q <= n+1 && q <= rounds; q++ {
			out = append(out, fmt.Sprintf("Question %d?", q))
		}
		if n == rounds {
			out = append(out, "Done, thanks")
		}
		return out
	}
	for round := 1; round <= rounds; round++ {
		for _, p := range phones {
			e.text(tn.number, p, fmt.Sprintf("answer %d", round))
		}
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		proc.kill()
		// River would rescue the dead process's running steps 40-70 s from now (the campaign
		// fault test proves it); this test is about what a re-run step does, so it stands in
		// for the rescuer at once instead of waiting four times over.
		_, err := db.Exec(context.Background(), `UPDATE polls.river_job SET state = 'available', scheduled_at = now() WHERE state = 'running'`)
		require.NoError(t, err)
		proc.start()
		for _, p := range phones {
			eventually(t, 90*time.Second, fmt.Sprintf("%s's message after answer %d", p, round), func() bool {
				_, ok := tn.asked(p, round+1)
				return ok
			})
		}
	}
	time.Sleep(time.Second)
	_, ps := tn.participants(id, "")
	for _, p := range phones {
		assert.Equal(t, want(rounds), tn.outgoing(p), "%s: each question once, in order", p)
		assert.Equal(t, "completed", ps[p]["status"], p)
		assert.EqualValues(t, rounds, ps[p]["responseCount"], p)
	}
	res := tn.do("GET", "/api/polls/"+id, nil)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, "completed", res.JSON(t)["status"])
}
