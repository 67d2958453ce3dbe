// Passkeys on the hosted pages. On the sign-in page: the browser's autofill offers passkeys in the
// e-mail field where it can (conditional mediation), and "Sign in with a passkey" asks for one. On the
// passkeys page: "Add a passkey". Without WebAuthn (or without this script) those forms stay hidden
// and everything else works as before. The server sends options with binary values in base64url; the
// answer goes back the same way, in a form POST, so that the server answers with a page or a redirect.
(function () {
  "use strict";
  if (!window.PublicKeyCredential || !navigator.credentials || !window.fetch) {
    return;
  }

  function decode(s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) {
      s += "=";
    }
    var bin = atob(s);
    var out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) {
      out[i] = bin.charCodeAt(i);
    }
    return out.buffer;
  }

  function encode(buf) {
    var bytes = new Uint8Array(buf);
    var bin = "";
    for (var i = 0; i < bytes.length; i++) {
      bin += String.fromCharCode(bytes[i]);
    }
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function decodeIDs(list) {
    (list || []).forEach(function (c) {
      c.id = decode(c.id);
    });
  }

  // ServerError is the server's refusal of a ceremony's beginning: a message, and the field it is about.
  function ServerError(message, field) {
    this.name = "ServerError";
    this.message = message;
    this.field = field;
  }

  // begin asks the server for a ceremony's options (with the form's CSRF token and extra fields).
  function begin(form, extra) {
    var body = new URLSearchParams();
    body.set("csrf_token", form.elements.namedItem("csrf_token").value);
    Object.keys(extra).forEach(function (k) {
      body.set(k, extra[k]);
    });
    return fetch(form.getAttribute("data-begin"), {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: body
    }).then(function (res) {
      return res.json().catch(function () {
        return {};
      }).then(function (o) {
        if (!res.ok || !o.publicKey) {
          throw new ServerError(o.error || "", o.field);
        }
        return o;
      });
    });
  }

  function finish(form, ceremony, credential) {
    form.elements.namedItem("ceremony").value = ceremony;
    form.elements.namedItem("credential").value = JSON.stringify(credential);
    form.submit();
  }

  // message is what to say about e in el: the server's words, or el's data-* texts (the page's
  // language; the server wrote them).
  function message(e, el) {
    if (e instanceof ServerError) {
      return e.message || el.dataset.unavailable;
    }
    if (e && (e.name === "NotAllowedError" || e.name === "AbortError")) {
      return el.dataset.cancelled;
    }
    if (e && e.name === "InvalidStateError") {
      return el.dataset.exists;
    }
    return el.dataset.failed;
  }

  function show(el, text) {
    el.textContent = text;
    el.hidden = false;
  }

  // Sign-in page.
  var signin = document.getElementById("passkey-signin");
  if (signin) {
    var signinError = document.getElementById("passkey-error");
    var pending = null;
    var run = function (conditional) {
      if (pending) {
        pending.abort();
      }
      var ctl = new AbortController();
      pending = ctl;
      return begin(signin, {}).then(function (o) {
        var pk = o.publicKey;
        pk.challenge = decode(pk.challenge);
        decodeIDs(pk.allowCredentials);
        var req = { publicKey: pk, signal: ctl.signal };
        if (conditional) {
          req.mediation = "conditional";
        }
        return navigator.credentials.get(req).then(function (c) {
          if (pending !== ctl) {
            return;
          }
          finish(signin, o.ceremony, {
            id: c.id,
            rawId: encode(c.rawId),
            type: c.type,
            authenticatorAttachment: c.authenticatorAttachment || undefined,
            response: {
              clientDataJSON: encode(c.response.clientDataJSON),
              authenticatorData: encode(c.response.authenticatorData),
              signature: encode(c.response.signature),
              userHandle: c.response.userHandle ? encode(c.response.userHandle) : undefined
            },
            clientExtensionResults: c.getClientExtensionResults()
          });
        });
      });
    };
    signin.hidden = false;
    document.getElementById("passkey-signin-button").addEventListener("click", function () {
      signinError.hidden = true;
      run(false).catch(function (e) {
        if (e && e.name === "AbortError" && pending && pending.signal.aborted) {
          return; // replaced by a newer request
        }
        show(signinError, message(e, signinError));
      });
    });
    // The autofill is an offer, renewed when its ceremony times out (a page left open); the button
    // reports errors. A request that ends at once is not renewed, so nothing loops.
    var offer = function () {
      var started = Date.now();
      var request = run(true);
      var mine = pending; // run sets it at once; a press of the button replaces it
      request.catch(function (e) {
        if (e && e.name === "NotAllowedError" && Date.now() - started > 60000 && pending === mine && !mine.signal.aborted) {
          offer();
        }
      });
    };
    if (PublicKeyCredential.isConditionalMediationAvailable) {
      PublicKeyCredential.isConditionalMediationAvailable().then(function (ok) {
        if (ok) {
          offer();
        }
      });
    }
  }

  // Passkeys page.
  var add = document.getElementById("passkey-add");
  if (add) {
    var addError = document.getElementById("passkey-error");
    var name = add.elements.namedItem("name");
    var password = add.elements.namedItem("password");
    add.hidden = false;
    document.getElementById("passkey-unsupported").hidden = true;
    add.addEventListener("submit", function (ev) {
      ev.preventDefault();
      addError.hidden = true;
      [name, password].forEach(function (f) {
        f.removeAttribute("aria-invalid");
      });
      begin(add, { name: name.value, password: password.value }).then(function (o) {
        var pk = o.publicKey;
        pk.challenge = decode(pk.challenge);
        pk.user.id = decode(pk.user.id);
        decodeIDs(pk.excludeCredentials);
        return navigator.credentials.create({ publicKey: pk }).then(function (c) {
          password.disabled = true; // checked at the beginning; not sent again
          finish(add, o.ceremony, {
            id: c.id,
            rawId: encode(c.rawId),
            type: c.type,
            authenticatorAttachment: c.authenticatorAttachment || undefined,
            response: {
              clientDataJSON: encode(c.response.clientDataJSON),
              attestationObject: encode(c.response.attestationObject),
              transports: c.response.getTransports ? c.response.getTransports() : []
            },
            clientExtensionResults: c.getClientExtensionResults()
          });
        });
      }).catch(function (e) {
        show(addError, message(e, addError));
        var field = e instanceof ServerError && add.elements.namedItem(e.field);
        if (field && field.focus) {
          field.setAttribute("aria-invalid", "true");
          field.setAttribute("aria-errormessage", "passkey-error");
          field.focus();
        }
      });
    });
  }
})();
