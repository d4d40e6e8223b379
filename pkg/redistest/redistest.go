// Package redistest gives each test a Redis database of its own, so tests can run in parallel
// and never write to the database `make run` uses.
//
// Each test process starts a private redis-server on a free loopback port with 1024 databases,
// and hands them out one per test, emptied when the test ends. Where redis-server is not
// installed, tests claim databases 1-15 of the shared server on 127.0.0.1:6379 instead, waiting
// for one to be free.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	databases  = 1024
	sharedAddr = "127.0.0.1:6379"
	// claimWait bounds how long a test waits for one of the shared server's databases.
	claimWait = 5 * time.Minute
	claimTTL  = 15 * time.Minute
)

// server is this process's private redis-server, or the shared one when addr is sharedAddr.
var server struct {
	once sync.Once
	err  error
	addr string
	cmd  *exec.Cmd
	dir  string
	done chan struct{} // closed when the private server exited

	mu   sync.Mutex
	free []int // databases returned by finished tests
	next int   // the lowest database never handed out
}

// New returns the URL of a Redis database of the test's own and a client of it. The database
// is emptied and released at cleanup, after the cleanups the test registers later (e.g. stopping
// a service that uses it).
func New(tb testing.TB) (string, *redis.Client) {
	tb.Helper()
	db, release, err := reserve()
	if err != nil {
		tb.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: server.addr, DB: db})
	tb.Cleanup(func() {
		_ = rdb.Close()
		if err := release(); err != nil {
			tb.Error(err)
		}
	})
	return urlOf(db), rdb
}

// Reserve is New for code that is not a test (e.g. building a database template): release
// empties the database and hands it back.
func Reserve() (url string, release func() error, err error) {
	db, release, err := reserve()
	if err != nil {
		return "", nil, err
	}
	return urlOf(db), release, nil
}

func reserve() (db int, release func() error, err error) {
	server.once.Do(func() { server.err = startServer() })
	if server.err != nil {
		return 0, nil, server.err
	}
	var free func()
	if server.cmd != nil {
		db, free, err = take()
	} else {
		db, free, err = claim()
	}
	if err != nil {
		return 0, nil, err
	}
	return db, func() error {
		defer free()
		rdb := redis.NewClient(&redis.Options{Addr: server.addr, DB: db})
		defer rdb.Close()
		if err := rdb.FlushDB(context.Background()).Err(); err != nil {
			return fmt.Errorf("redistest: empty database %d: %w", db, err)
		}
		return nil
	}, nil
}

func urlOf(db int) string { return fmt.Sprintf("redis://%s/%d", server.addr, db) }

// take hands out a database of the private server.
func take() (int, func(), error) {
	server.mu.Lock()
	defer server.mu.Unlock()
	var db int
	switch {
	case len(server.free) > 0:
		db, server.free = server.free[len(server.free)-1], server.free[:len(server.free)-1]
	case server.next < databases:
		db = server.next
		server.next++
	default:
		return 0, nil, fmt.Errorf("redistest: all %d databases are in use", databases)
	}
	return db, func() {
		server.mu.Lock()
		defer server.mu.Unlock()
		server.free = append(server.free, db)
	}, nil
}

// claim takes one of databases 1-15 of the shared server with a key in database 0 (other test
// processes claim them too), emptying what a crashed run may have left in it.
func claim() (int, func(), error) {
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: server.addr})
	var b [8]byte
	_, _ = rand.Read(b[:])
	owner := hex.EncodeToString(b[:])
	deadline := time.Now().Add(claimWait)
	for time.Now().Before(deadline) {
		for db := 1; db < 16; db++ {
			key := "chorus:test:redis-db:" + strconv.Itoa(db)
			ok, err := admin.SetNX(ctx, key, owner, claimTTL).Result()
			if err != nil {
				_ = admin.Close()
				return 0, nil, fmt.Errorf("redistest: claim a database on %s: %w", server.addr, err)
			}
			if !ok {
				continue
			}
			left := redis.NewClient(&redis.Options{Addr: server.addr, DB: db})
			_ = left.FlushDB(ctx).Err()
			_ = left.Close()
			return db, func() {
				defer admin.Close()
				if admin.Get(ctx, key).Val() == owner {
					_ = admin.Del(ctx, key).Err()
				}
			}, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = admin.Close()
	return 0, nil, fmt.Errorf("redistest: databases 1-15 of %s stayed claimed for %s", server.addr, claimWait)
}

// startServer starts the private server, or picks the shared one when redis-server is missing.
func startServer() error {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		server.addr = sharedAddr
		return nil
	}
	server.dir, err = os.MkdirTemp("", "chorus-redistest-")
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	// A free port can be taken between choosing and binding it: try a few.
	for range 5 {
		var port int
		if port, err = freePort(); err != nil {
			break
		}
		if err = startOn(bin, port); err == nil {
			return nil
		}
	}
	_ = os.RemoveAll(server.dir)
	return err
}

func startOn(bin string, port int) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--databases", strconv.Itoa(databases), "--save", "", "--appendonly", "no",
		"--dir", server.dir, "--logfile", filepath.Join(server.dir, "redis.log"))
	dieWithParent(cmd)
	started, done := make(chan error, 1), make(chan struct{})
	go func() {
		// The kernel's parent-death signal follows the thread that started the child: keep this
		// goroutine on its thread, waiting, for as long as the server runs.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(done)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("redistest: start redis-server: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		select {
		case <-done:
			return fmt.Errorf("redistest: redis-server on %s exited (see %s)", addr, filepath.Join(server.dir, "redis.log"))
		default:
		}
		if rdb.Ping(context.Background()).Err() == nil {
			server.addr, server.cmd, server.done = addr, cmd, done
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-done
	return errors.New("redistest: redis-server on " + addr + " did not answer within 10s")
}

func freePort() (int, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redistest: find a free port: %w", err)
	}
	defer lis.Close()
	return lis.Addr().(*net.TCPAddr).Port, nil
}

// Close stops the private server. Call it from TestMain after m.Run.
func Close() {
	if server.cmd == nil {
		return
	}
	_ = server.cmd.Process.Kill()
	<-server.done
	_ = os.RemoveAll(server.dir)
	server.cmd = nil
}
