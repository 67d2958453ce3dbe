// Package reliability proves formsservice's promises under load, faults and hostile input, against the
// real binary (`formsservice forms|auth|health`) and real redis-server processes on loopback: nothing
// acknowledged is lost when Redis is killed, every stored contact message is delivered at least once
// when the worker dies, a Redis Cluster failover costs only the seconds without a master, auth never
// issues a token it should not when Redis restarts mid-flow, hostile requests get the spec's answers
// and store nothing, SIGTERM loses no request in flight, and mixed traffic leaks no goroutine or
// connection. Every test is bounded and prints its counts; `make bench` runs the long soak.
package reliability
