// The contact and waitlist forms, posted to the forms service as JSON; its 400 answer names a code per
// field (docs/forms.md), shown next to the field.
import { type FormEvent, type ReactNode, useEffect, useId, useRef, useState } from 'react'
import { formsserviceUrl } from './config'

const fieldMessages: Record<string, string> = {
  required: 'This field is required.',
  invalid_type: 'This value has the wrong type.',
  too_short: 'This is too short.',
  too_long: 'This is too long.',
  invalid_email: 'This is not a valid e-mail address.',
  invalid_choice: 'Please pick one of the choices.',
  must_be_true: 'Please tick this box.',
}

type Status = { kind: 'idle' | 'pending' | 'ok' | 'error'; text: string }

/** The form's fields as the service wants them: checkboxes as booleans, empty optional fields left out. */
function values(form: HTMLFormElement): Record<string, string | boolean> {
  const out: Record<string, string | boolean> = {}
  for (const el of Array.from(form.elements) as HTMLInputElement[]) {
    if (!el.name) continue
    if (el.type === 'checkbox') out[el.name] = el.checked
    else if (el.value.trim() !== '') out[el.name] = el.value
  }
  return out
}

function usePost(path: string, thanks: string) {
  const [errors, setErrors] = useState<Record<string, string>>({})
  const [status, setStatus] = useState<Status>({ kind: 'idle', text: '' })
  // One Idempotency-Key per message: a retry of the same message is stored once.
  const keyed = useRef<{ payload: string; key: string } | null>(null)
  const formRef = useRef<HTMLFormElement | null>(null)

  // New field errors: the first field in error gets the focus, once React has marked it.
  useEffect(() => {
    if (Object.keys(errors).length) formRef.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus()
  }, [errors])

  async function onSubmit(ev: FormEvent<HTMLFormElement>) {
    ev.preventDefault()
    const form = (formRef.current = ev.currentTarget)
    const payload = JSON.stringify(values(form))
    if (keyed.current?.payload !== payload) keyed.current = { payload, key: crypto.randomUUID() }
    setErrors({})
    setStatus({ kind: 'pending', text: 'Sending…' })
    let res: Response
    try {
      res = await fetch(formsserviceUrl + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': keyed.current.key },
        body: payload,
      })
    } catch {
      // A refused CORS preflight looks like a network failure to a page.
      setStatus({ kind: 'error', text: 'Refused: the forms service did not accept this page’s origin, or could not be reached.' })
      return
    }
    const body = await res.json().catch(() => ({}))
    if (res.status === 201) {
      form.reset()
      keyed.current = null
      setStatus({ kind: 'ok', text: thanks })
    } else if (res.status === 200 && body.status === 'duplicate') {
      setStatus({ kind: 'ok', text: 'This address is already on the waitlist.' })
    } else if (res.status === 400 && body.errors) {
      setErrors(body.errors)
      setStatus({ kind: 'error', text: 'Please correct the marked fields.' })
    } else if (res.status === 429) {
      setStatus({ kind: 'error', text: 'Too many submissions; please try again in a minute.' })
    } else {
      setStatus({ kind: 'error', text: `The service could not save this (HTTP ${res.status}); please try again.` })
    }
  }
  return { errors, status, onSubmit }
}

/** What a control of a Field gets: its id, name, and the link to its error. */
interface ControlProps {
  id: string
  name: string
  'aria-invalid'?: boolean
  'aria-describedby'?: string
}

/** A labelled control with its error below it, tied together for screen readers. */
function Field(props: { label: ReactNode; name: string; error?: string; children: (a: ControlProps) => ReactNode }) {
  const id = useId()
  const errorId = id + '-error'
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.children({
        id,
        name: props.name,
        'aria-invalid': props.error ? true : undefined,
        'aria-describedby': props.error ? errorId : undefined,
      })}
      <span className="field-error" id={errorId} data-error-for={props.name} data-code={props.error}>
        {props.error ? (fieldMessages[props.error] ?? props.error) : ''}
      </span>
    </div>
  )
}

function StatusLine({ status }: { status: Status }) {
  return (
    <p className="form-status" role="status" data-kind={status.kind}>
      {status.text}
    </p>
  )
}

const optional = <span className="optional"> (optional)</span>

export function ContactForm() {
  const { errors, status, onSubmit } = usePost('/contact', 'Thank you! Your message was sent.')
  return (
    <form id="contact-form" noValidate onSubmit={onSubmit}>
      <Field label="Name" name="name" error={errors.name}>
        {(a) => <input {...a} autoComplete="name" />}
      </Field>
      <Field label="E-mail" name="email" error={errors.email}>
        {(a) => <input {...a} type="email" autoComplete="email" />}
      </Field>
      <Field label={<>Organization{optional}</>} name="organization" error={errors.organization}>
        {(a) => <input {...a} autoComplete="organization" />}
      </Field>
      <Field label="Topic" name="topic" error={errors.topic}>
        {(a) => (
          <select {...a} defaultValue="general">
            <option value="general">General</option>
            <option value="sales">Sales</option>
            <option value="support">Support</option>
            <option value="partnership">Partnership</option>
            <option value="press">Press</option>
          </select>
        )}
      </Field>
      <Field label="Message (10 to 4,000 characters)" name="message" error={errors.message}>
        {(a) => <textarea {...a} rows={4} />}
      </Field>
      <button type="submit" disabled={status.kind === 'pending'}>
        Send message
      </button>
      <StatusLine status={status} />
    </form>
  )
}

export function WaitlistForm() {
  const { errors, status, onSubmit } = usePost('/waitlist', 'You are on the waitlist. Thank you!')
  const consentError = useId()
  return (
    <form id="waitlist-form" noValidate onSubmit={onSubmit}>
      <Field label="E-mail" name="email" error={errors.email}>
        {(a) => <input {...a} type="email" autoComplete="email" />}
      </Field>
      <Field label={<>Name{optional}</>} name="name" error={errors.name}>
        {(a) => <input {...a} autoComplete="name" />}
      </Field>
      <Field label={<>Size{optional}</>} name="size" error={errors.size}>
        {(a) => (
          <select {...a} defaultValue="">
            <option value="">—</option>
            <option value="1–50">1–50</option>
            <option value="51–250">51–250</option>
            <option value="251–1,000">251–1,000</option>
            <option value="1,000+">1,000+</option>
          </select>
        )}
      </Field>
      <div className="field checkbox">
        <label>
          <input
            name="consent"
            type="checkbox"
            aria-invalid={errors.consent ? true : undefined}
            aria-describedby={errors.consent ? consentError : undefined}
          />{' '}
          I agree to be contacted about the product.
        </label>
        <span className="field-error" id={consentError} data-error-for="consent" data-code={errors.consent}>
          {errors.consent ? fieldMessages[errors.consent] : ''}
        </span>
      </div>
      <button type="submit" disabled={status.kind === 'pending'}>
        Join
      </button>
      <StatusLine status={status} />
    </form>
  )
}
