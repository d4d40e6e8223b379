package clients

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/telemetry"
)

// WindowSize is the HTTP/2 flow-control window of every stream and connection, both ways.
// Fixed windows turn off grpc-go's bandwidth-delay estimation, which pings the peer on most
// answers and makes each call wake both processes once more; inside the cluster network a
// megabyte is never the limit.
const WindowSize = 1 << 20

// DialGRPC returns a lazy connection to the service named name at addr, the way every caller
// should make one: plaintext inside the cluster network, with trace context propagated. It
// connects on first use.
func DialGRPC(name, addr string) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient(addr, append(telemetry.GRPCClient(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(WindowSize),
		grpc.WithInitialConnWindowSize(WindowSize),
	)...)
	if err != nil {
		return nil, fmt.Errorf("dial %s at %s: %w", name, addr, err)
	}
	return conn, nil
}

// Dial returns a lazy connection to peer at addr for the service named caller (it acts as
// "service:<caller>").
func Dial(peer, addr, caller string) (*Conn, error) {
	cc, err := DialGRPC(peer, addr)
	if err != nil {
		return nil, err
	}
	return &Conn{peer: peer, caller: caller, cc: cc, Timeout: DefaultTimeout, Attempts: DefaultAttempts, Backoff: DefaultBackoff}, nil
}

// DialNeeds returns a lazy connection, by registry name, to each service caller needs
// (registry.Service.Needs) at its address in peers. A need without an address is left out, for
// the caller to refuse or do without; on error nothing is left open.
func DialNeeds(caller registry.Service, peers registry.Peers) (map[string]*Conn, error) {
	conns := make(map[string]*Conn, len(caller.Needs))
	for _, name := range caller.Needs {
		addr := peers[name]
		if addr == "" {
			continue
		}
		c, err := Dial(name, addr, caller.Name)
		if err != nil {
			for _, c := range conns {
				_ = c.Close()
			}
			return nil, err
		}
		conns[name] = c
	}
	return conns, nil
}
