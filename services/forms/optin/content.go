package optin

import "github.com/formsservice/formsservice/services/platform/mail"

// confirmation is the mail that asks the person to confirm a sign-up. It names the site, what happens
// when the link is not used, and how to unsubscribe; the text part gives the links themselves.
var confirmation = mail.MustContent("waitlist-confirmation",
	`Confirm your sign-up to {{.Brand.Product}}`,
	`Someone, probably you, put this address on the waitlist of {{.Brand.Product}}.

To confirm, open this link and press the button on its page:
{{.Data.Confirm}}

The link works until {{.Data.Until}}. If you do not confirm, the address is erased then and you get no more mail.
If it was not you, do nothing.

To unsubscribe: {{.Data.Unsubscribe}}`,
	`<p>Someone, probably you, put this address on the waitlist of {{.Brand.Product}}.</p>
<p>To confirm, open the link and press the button on its page:</p>
{{.Button .Data.Confirm "Confirm my sign-up"}}
<p>The link works until {{.Data.Until}}. If you do not confirm, the address is erased then and you get no more mail. If it was not you, do nothing.</p>
<p><a href="{{.Data.Unsubscribe}}">Unsubscribe</a></p>`)

type confirmationData struct {
	Confirm, Unsubscribe, Until string
}
