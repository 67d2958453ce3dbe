// The demo page's contact and waitlist forms in real Chromium against the real forms service.
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest'
import { type Browser, launch, screenshot } from './browser'

const devUrl = inject('devUrl')
const otherUrl = inject('otherUrl')
let b: Browser

beforeEach(async () => {
  b = await launch()
})
afterEach(async () => {
  await b.close()
})

const unique = () => `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
const status = (form: string) => b.page.locator(`#${form} .form-status`)
const fieldError = (form: string, field: string) => b.page.locator(`#${form} [data-error-for="${field}"]`)

async function fillContact(message: string, email = `ada+${unique()}@example.com`) {
  await b.page.fill('#contact-name', 'Ada Lovelace')
  await b.page.fill('#contact-email', email)
  await b.page.fill('#contact-organization', 'Analytical Engines Ltd')
  await b.page.selectOption('#contact-topic', 'sales')
  await b.page.fill('#contact-message', message)
}

describe('contact form', () => {
  it('a valid message is accepted (201) and the form says so', async () => {
    await b.page.goto(devUrl + '/demo/')
    await fillContact('Hello, I would like to know more about the product.')
    const [res] = await Promise.all([
      b.page.waitForResponse((r) => r.url() === devUrl + '/contact' && r.request().method() === 'POST'),
      b.page.click('#contact-form button[type="submit"]'),
    ])
    expect(res.status()).toBe(201)
    expect(await res.json()).toEqual({ status: 'created' })
    await expect.poll(() => status('contact-form').getAttribute('data-kind')).toBe('ok')
    expect(await status('contact-form').textContent()).toMatch(/Thank you/)
    expect(await b.page.inputValue('#contact-message')).toBe('') // reset
    expect(b.errors).toEqual([])
  })

  it('shows each field error next to its field', async () => {
    await b.page.goto(devUrl + '/demo/')
    await fillContact('too short', 'not-an-address')
    await b.page.fill('#contact-name', '')
    const [res] = await Promise.all([
      b.page.waitForResponse((r) => r.url() === devUrl + '/contact'),
      b.page.click('#contact-form button[type="submit"]'),
    ])
    expect(res.status()).toBe(400)
    const body = await res.json()
    expect(body).toMatchObject({ status: 'invalid', errors: { name: 'required', email: 'invalid_email', message: 'too_short' } })
    for (const [field, code] of Object.entries(body.errors as Record<string, string>)) {
      await expect.poll(() => fieldError('contact-form', field).getAttribute('data-code')).toBe(code)
      expect(await fieldError('contact-form', field).textContent()).not.toBe('')
      expect(await b.page.getAttribute(`#contact-${field}`, 'aria-invalid')).toBe('true')
    }
    expect(await fieldError('contact-form', 'organization').textContent()).toBe('')
    expect(await status('contact-form').getAttribute('data-kind')).toBe('error')
    await screenshot(b.page, 'demo-page-field-errors.png')

    // correcting the fields clears the errors
    await fillContact('Now this message is long enough.')
    await b.page.click('#contact-form button[type="submit"]')
    await expect.poll(() => status('contact-form').getAttribute('data-kind')).toBe('ok')
    expect(await fieldError('contact-form', 'message').textContent()).toBe('')
    expect(b.errors.filter((e) => !e.includes('400'))).toEqual([]) // Chromium logs the 400 response itself
  })
})

describe('waitlist form', () => {
  it('joins once; the same address again (in other case) is a duplicate', async () => {
    await b.page.goto(devUrl + '/demo/')
    const email = `grace+${unique()}@example.com`
    await b.page.fill('#waitlist-email', email)
    await b.page.fill('#waitlist-name', 'Grace Hopper')
    await b.page.selectOption('#waitlist-role', 'officer')
    await b.page.selectOption('#waitlist-size', '51–250')
    await b.page.check('#waitlist-consent')
    const [first] = await Promise.all([
      b.page.waitForResponse((r) => r.url() === devUrl + '/waitlist'),
      b.page.click('#waitlist-form button[type="submit"]'),
    ])
    expect(first.status()).toBe(201)
    await expect.poll(() => status('waitlist-form').textContent()).toMatch(/on the waitlist/)

    await b.page.fill('#waitlist-email', email.toUpperCase())
    await b.page.check('#waitlist-consent')
    const [second] = await Promise.all([
      b.page.waitForResponse((r) => r.url() === devUrl + '/waitlist'),
      b.page.click('#waitlist-form button[type="submit"]'),
    ])
    expect(second.status()).toBe(200)
    expect(await second.json()).toEqual({ status: 'duplicate' })
    await expect.poll(() => status('waitlist-form').textContent()).toMatch(/already on the waitlist/)
  })

  it('without consent the consent box is marked', async () => {
    await b.page.goto(devUrl + '/demo/')
    await b.page.fill('#waitlist-email', `x+${unique()}@example.com`)
    await b.page.click('#waitlist-form button[type="submit"]')
    await expect.poll(() => fieldError('waitlist-form', 'consent').getAttribute('data-code')).toBe('must_be_true')
    expect(await fieldError('waitlist-form', 'email').textContent()).toBe('')
  })
})

describe('a page at a disallowed origin', () => {
  it('is refused by the forms service, and the page says so', async () => {
    await b.page.goto(otherUrl + '/demo/')
    expect(new URL(b.page.url()).origin).not.toBe(new URL(devUrl).origin)
    const email = `mallory+${unique()}@example.com`
    await b.page.fill('#waitlist-email', email)
    await b.page.check('#waitlist-consent')
    await b.page.click('#waitlist-form button[type="submit"]')
    await expect.poll(() => status('waitlist-form').textContent()).toMatch(/^Refused/)
    expect(await status('waitlist-form').getAttribute('data-kind')).toBe('error')
    // the browser's CORS check failed the request: the page never saw a response
    const post = b.requests.find((r) => r.method() === 'POST' && r.url() === devUrl + '/waitlist')!
    expect(post.failure()?.errorText).toBeTruthy()
    expect(await post.response()).toBeNull()
    // because the service refuses that origin's preflight
    const preflight = await fetch(devUrl + '/waitlist', {
      method: 'OPTIONS',
      headers: { origin: otherUrl, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    })
    expect(preflight.status).toBe(403)
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull()

    // the same request with that Origin, sent outside a browser: 403 {status:"error"}, nothing stored
    const direct = await fetch(devUrl + '/waitlist', {
      method: 'POST',
      headers: { origin: otherUrl, 'content-type': 'application/json' },
      body: JSON.stringify({ email, consent: true }),
    })
    expect(direct.status).toBe(403)
    expect(await direct.json()).toEqual({ status: 'error' })
    // from an allowed origin the address is new: the refused attempts stored nothing
    const allowed = await fetch(devUrl + '/waitlist', {
      method: 'POST',
      headers: { origin: devUrl, 'content-type': 'application/json' },
      body: JSON.stringify({ email, consent: true }),
    })
    expect(allowed.status).toBe(201)
  })
})
