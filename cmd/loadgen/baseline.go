package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
)

// The two baselines of `make bench`, run in their own process like the service:
//
//	bare:  a Fiber handler that decodes the JSON body and answers 201 — the floor of any JSON endpoint;
//	setnx: the same handler doing one Redis SETNX — the floor of any handler that stores (one round trip).

var created = []byte(`{"status":"created"}`)

type baselineBody struct {
	Email   string `json:"email"`
	Consent bool   `json:"consent"`
	Name    string `json:"name"`
	Role    string `json:"role"`
	Size    string `json:"size"`
	Message string `json:"message"`
}

func runBaseline(mode, addr, redisURL string) error {
	var rdb *redis.Client
	if mode == "setnx" {
		opt, err := redis.ParseURL(redisURL)
		if err != nil {
			return err
		}
		rdb = redis.NewClient(opt)
		defer rdb.Close()
	} else if mode != "bare" {
		return fmt.Errorf("baseline mode %q: want bare or setnx", mode)
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/livez", func(c *fiber.Ctx) error { return c.SendString("ok") })
	app.Post("/*", func(c *fiber.Ctx) error {
		var b baselineBody
		if err := json.Unmarshal(c.Body(), &b); err != nil || b.Email == "" {
			return c.Status(fiber.StatusBadRequest).SendString(`{"status":"invalid"}`)
		}
		if rdb != nil {
			ok, err := rdb.SetNX(c.UserContext(), "bench:"+b.Email, 1, 0).Result()
			if err != nil {
				return c.Status(fiber.StatusBadGateway).SendString(`{"status":"error"}`)
			}
			if !ok {
				return c.Status(fiber.StatusOK).SendString(`{"status":"duplicate"}`)
			}
		}
		c.Status(fiber.StatusCreated)
		c.Response().Header.SetContentType(fiber.MIMEApplicationJSON)
		c.Response().SetBodyRaw(created)
		return nil
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stdout, ln.Addr().String()) // the parent reads where we listen
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() { <-ctx.Done(); _ = app.Shutdown() }()
	return app.Listener(ln)
}
