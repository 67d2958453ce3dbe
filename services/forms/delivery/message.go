package delivery

import (
	"encoding/json"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/forms/notify"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/email"
)

// decodeStored turns a stream entry into the message the team receives: its ID is the message's
// (store.MessageID), which a retried dead letter keeps; deployment is the store's (store.DeploymentID).
func decodeStored(msg redis.XMessage, deployment string) (notify.Message, bool) {
	raw, ok := msg.Values[store.RecordField].(string)
	if !ok {
		return notify.Message{}, false
	}
	var rec store.ContactRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil || rec.Email == "" {
		return notify.Message{}, false
	}
	addr := rec.Email
	if ascii, ok := email.ASCII(addr); ok {
		addr = ascii // a mail header wants the ASCII domain
	}
	id := store.MessageID(msg)
	received := rec.ReceivedAt
	if received.IsZero() {
		received = store.StreamTime(id)
	}
	return notify.Message{
		ID: id, Deployment: deployment, ReceivedAt: received, Name: rec.Name, Email: addr, Organization: rec.Organization,
		Topic: rec.Topic, Text: rec.Message, Origin: rec.Origin,
	}, true
}
