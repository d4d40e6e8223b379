package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// idempotencyStore keeps the keys. Every claim first takes an in-flight lock in Redis (SET NX
// with a bound, holding the fingerprint), so a concurrent retry is answered from Redis. A key
// of a route that does not send or spend keeps its answer in Redis for 24 hours. A durable
// one (durableRoutes) also writes its row in gateway.idempotency_keys, running, before the
// request runs, and completes it with the answer: after a Redis restart the row still
// answers.
type idempotencyStore struct {
	rdb  *redis.Client
	pool *pgxpool.Pool
	// hold bounds how long a running request keeps its key: past it (a crashed gateway), the
	// lock expires and a durable row may be taken over by a retry with the same request.
	hold time.Duration
}

// idempotencyScope is one key: an organization's user's.
type idempotencyScope struct {
	org       uuid.UUID
	user, key string
	durable   bool
}

// redisKey hashes the user and key, which may be long or hold any printable character.
func (s idempotencyScope) redisKey() string {
	sum := sha256.Sum256([]byte(s.user + "\x00" + s.key))
	return "chorus:gateway:idempotency:" + s.org.String() + ":" + hex.EncodeToString(sum[:])
}

// idempotencyRecord is a key's state: running (Token set, no Status) or completed with the
// answer to replay.
type idempotencyRecord struct {
	Fingerprint []byte `json:"f"`
	Token       string `json:"t,omitempty"`
	Status      int    `json:"s,omitempty"`
	ContentType string `json:"c,omitempty"`
	Body        []byte `json:"b,omitempty"`
}

func (r *idempotencyRecord) completed() bool { return r.Status != 0 }

// claim is a request's hold on its key: the lock value it wrote in Redis and the token of its
// durable row.
type claim struct {
	scope idempotencyScope
	token uuid.UUID
	lock  string
}

// claim takes the key for a request with fingerprint fp. When the key is taken, rec is its
// state: completed (replay it, if fp matches) or running.
func (s *idempotencyStore) claim(ctx context.Context, scope idempotencyScope, fp []byte) (claim, *idempotencyRecord, error) {
	c := claim{scope: scope, token: uuid.New()}
	lock, err := json.Marshal(idempotencyRecord{Fingerprint: fp, Token: c.token.String()})
	if err != nil {
		return c, nil, err
	}
	c.lock = string(lock)
	rec, err := s.lock(ctx, c)
	if err != nil || rec != nil || !scope.durable {
		return c, rec, err
	}
	rec, err = s.claimRow(ctx, c, fp)
	if err != nil || rec != nil {
		// Not ours to run: the lock goes, so the row alone answers.
		err = errors.Join(err, s.swap(ctx, c, "", 0))
	}
	return c, rec, err
}

// lock takes the Redis lock, or returns the key's record there.
func (s *idempotencyStore) lock(ctx context.Context, c claim) (*idempotencyRecord, error) {
	key := c.scope.redisKey()
	for range 3 {
		ok, err := s.rdb.SetNX(ctx, key, c.lock, s.hold).Result()
		if err != nil {
			return nil, fmt.Errorf("idempotency lock: %w", err)
		}
		if ok {
			return nil, nil
		}
		raw, err := s.rdb.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			continue // expired or released meanwhile: try again
		}
		if err != nil {
			return nil, fmt.Errorf("idempotency lock: %w", err)
		}
		var rec idempotencyRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, fmt.Errorf("idempotency record %s: %w", key, err)
		}
		return &rec, nil
	}
	return nil, errors.New("idempotency lock: the key keeps changing hands")
}

// claimRow writes the durable row, running, unless one is there: a row past the 24 hours is
// a new request's, and a running row of the same request claimed longer ago than hold was
// left by a crash and is taken over. Otherwise the row is returned.
func (s *idempotencyStore) claimRow(ctx context.Context, c claim, fp []byte) (*idempotencyRecord, error) {
	for range 2 {
		var mine bool
		err := s.pool.QueryRow(ctx, `
			INSERT INTO idempotency_keys AS k (organization_id, subject, key, fingerprint, token, state)
			VALUES ($1, $2, $3, $4, $5, 'running')
			ON CONFLICT (organization_id, subject, key) DO UPDATE
			SET fingerprint = excluded.fingerprint, token = excluded.token, state = 'running', status = NULL,
			    content_type = NULL, body = NULL, claimed_at = now(),
			    created_at = CASE WHEN k.created_at < now() - make_interval(secs => $6) THEN now() ELSE k.created_at END
			WHERE k.created_at < now() - make_interval(secs => $6)
			   OR (k.state = 'running' AND k.fingerprint = excluded.fingerprint AND k.claimed_at < now() - make_interval(secs => $7))
			RETURNING true`,
			c.scope.org, c.scope.user, c.scope.key, fp, c.token, idempotencyTTL.Seconds(), s.hold.Seconds(),
		).Scan(&mine)
		if err == nil {
			return nil, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("idempotency row: %w", err)
		}
		var rec idempotencyRecord
		var status *int32
		var contentType *string
		err = s.pool.QueryRow(ctx, `
			SELECT fingerprint, status, content_type, body FROM idempotency_keys
			WHERE organization_id = $1 AND subject = $2 AND key = $3`,
			c.scope.org, c.scope.user, c.scope.key,
		).Scan(&rec.Fingerprint, &status, &contentType, &rec.Body)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // swept meanwhile: claim again
		}
		if err != nil {
			return nil, fmt.Errorf("idempotency row: %w", err)
		}
		if status != nil {
			rec.Status = int(*status)
		}
		if contentType != nil {
			rec.ContentType = *contentType
		}
		return &rec, nil
	}
	return nil, errors.New("idempotency row: the key keeps changing hands")
}

// complete stores rec as the key's answer for 24 hours from its first request.
func (s *idempotencyStore) complete(ctx context.Context, c claim, rec *idempotencyRecord) error {
	if !c.scope.durable {
		raw, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return s.swap(ctx, c, string(raw), idempotencyTTL)
	}
	tag, err := s.pool.Exec(ctx, `
		UPDATE idempotency_keys SET state = 'completed', status = $5, content_type = $6, body = $7
		WHERE organization_id = $1 AND subject = $2 AND key = $3 AND token = $4`,
		c.scope.org, c.scope.user, c.scope.key, c.token, rec.Status, rec.ContentType, rec.Body)
	if err == nil && tag.RowsAffected() == 0 {
		err = errNoClaim
	}
	if err != nil {
		err = fmt.Errorf("idempotency row: %w", err)
	}
	return errors.Join(err, s.swap(ctx, c, "", 0))
}

// release frees the key (an answer not kept), so a retry runs again.
func (s *idempotencyStore) release(ctx context.Context, c claim) error {
	var err error
	if c.scope.durable {
		_, err = s.pool.Exec(ctx, `
			DELETE FROM idempotency_keys WHERE organization_id = $1 AND subject = $2 AND key = $3 AND token = $4`,
			c.scope.org, c.scope.user, c.scope.key, c.token)
		if err != nil {
			err = fmt.Errorf("idempotency row: %w", err)
		}
	}
	return errors.Join(err, s.swap(ctx, c, "", 0))
}

// errNoClaim is returned when a completion finds the key held by another request (its claim's
// bound passed and a retry took it over).
var errNoClaim = errors.New("the key is no longer held by this request")

// swapScript replaces the lock ARGV[1] with ARGV[2] for ARGV[3] ms, or deletes it when
// ARGV[2] is empty; a key another request holds is left alone.
var swapScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
return 1`)

func (s *idempotencyStore) swap(ctx context.Context, c claim, value string, ttl time.Duration) error {
	n, err := swapScript.Run(ctx, s.rdb, []string{c.scope.redisKey()}, c.lock, value, ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("idempotency lock: %w", err)
	}
	if n == 0 && value != "" {
		return errNoClaim
	}
	return nil
}

// sweepEvery is how often expired durable keys are deleted; a key past its 24 hours is a new
// request's whether or not it was swept yet.
const sweepEvery = 10 * time.Minute

// sweep deletes the durable keys past their 24 hours until ctx is done.
func (s *idempotencyStore) sweep(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		if err := s.sweepOnce(ctx); err != nil && ctx.Err() == nil {
			log.Warn("idempotency key sweep failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweepOnce deletes the durable keys past their 24 hours.
func (s *idempotencyStore) sweepOnce(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(secs => $1)`, idempotencyTTL.Seconds())
	return err
}
