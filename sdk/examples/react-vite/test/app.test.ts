// The React example as a person uses it, in real Chromium against `formsservice dev`: signing in and
// out through the hosted pages, the user shown, both forms with their field errors; WCAG 2.2 AA (axe-core)
// at desktop and phone widths, light and dark.
import { afterEach, describe, expect, inject, it } from 'vitest'
import { type Browser, axeViolations, demoUser, launch, nonTextContrastProblems, screenshot, tokenPosts } from './browser'

const devUrl = inject('devUrl')
const previewUrl = inject('previewUrl')
const viteDevUrl = inject('viteDevUrl')

let b: Browser | undefined
afterEach(async () => {
  await b?.close()
  b = undefined
})

const status = () => b!.page.locator('#auth-status')

async function signIn(appUrl: string) {
  const { page } = b!
  await page.goto(appUrl + '/')
  await expect.poll(() => status().getAttribute('data-state')).toBe('signed-out')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL((u) => u.origin === devUrl && u.pathname === '/oauth2/authorize')
  await page.fill('#email', demoUser.email)
  await page.fill('#password', demoUser.password)
  await page.click('form button[type="submit"]')
  await expect.poll(() => status().getAttribute('data-state')).toBe('signed-in')
}

describe.each([
  ['the production build (vite preview)', () => previewUrl],
  ['the Vite dev server (React development mode: StrictMode runs the callback effect twice)', () => viteDevUrl],
])('%s', (_name, appUrl) => {
  it('signs in through the hosted page, comes back to /, shows the user; the code is exchanged once', async () => {
    b = await launch()
    await signIn(appUrl())
    const { page } = b
    expect(new URL(page.url()).pathname).toBe('/')
    expect(await status().textContent()).toBe(`Signed in as ${demoUser.email}`)
    expect(await page.locator('#user-sub').textContent()).not.toBe('')
    expect(await page.locator('[role="alert"]').allTextContents()).toEqual([]) // no missing_code from a second callback
    expect(tokenPosts(b)).toHaveLength(1)
    // the code never reaches a Referer or the address bar after the callback
    expect(page.url()).not.toContain('code=')
    expect(b.errors).toEqual([])
  })
})

describe('signing out from another origin than the provider', () => {
  it('goes through the provider’s confirmation page and comes back signed out; the provider session has ended', async () => {
    b = await launch()
    await signIn(previewUrl)
    const { page } = b
    await page.getByRole('button', { name: 'Sign out' }).click()
    // no id_token_hint travels in a URL, so the provider asks the person before ending its session
    await page.waitForURL((u) => u.origin === devUrl && u.pathname === '/oauth2/logout')
    expect(page.url()).not.toContain('id_token_hint')
    await screenshot(page, 'react-vite-logout-confirmation.png')
    await page.click('form button[type="submit"]')
    await page.waitForURL((u) => u.origin === previewUrl && u.pathname === '/')
    await expect.poll(() => status().getAttribute('data-state')).toBe('signed-out')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL((u) => u.pathname === '/oauth2/authorize')
    expect(await page.locator('#password').isVisible()).toBe(true) // asked for the password again
    expect(b.errors).toEqual([])
  })
})

const unique = () => `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
const fieldError = (form: string, field: string) => b!.page.locator(`#${form} [data-error-for="${field}"]`)
const formStatus = (form: string) => b!.page.locator(`#${form} .form-status`)

describe('forms', () => {
  it('contact: field errors next to their fields, then a message that is accepted', async () => {
    b = await launch()
    const { page } = b
    await page.goto(previewUrl + '/')
    await page.getByLabel('E-mail').first().fill('not-an-address')
    await page.getByLabel('Message (10 to 4,000 characters)').fill('too short')
    const [invalid] = await Promise.all([
      page.waitForResponse((r) => r.url() === devUrl + '/contact' && r.request().method() === 'POST'),
      page.click('#contact-form button[type="submit"]'),
    ])
    expect(invalid.status()).toBe(400)
    const { errors } = await invalid.json()
    expect(errors).toMatchObject({ name: 'required', email: 'invalid_email', message: 'too_short' })
    for (const [field, code] of Object.entries(errors as Record<string, string>)) {
      await expect.poll(() => fieldError('contact-form', field).getAttribute('data-code')).toBe(code)
      expect(await fieldError('contact-form', field).textContent()).not.toBe('')
      const control = page.locator(`#contact-form [name="${field}"]`)
      expect(await control.getAttribute('aria-invalid')).toBe('true')
      expect(await control.getAttribute('aria-describedby')).toBe(await fieldError('contact-form', field).getAttribute('id'))
    }
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('name'))).toBe('name') // the first field in error
    expect(await axeViolations(page)).toEqual([])
    await screenshot(page, 'react-vite-field-errors.png')

    await page.locator('#contact-form [name="name"]').fill('Ada Lovelace')
    await page.locator('#contact-form [name="email"]').fill(`ada+${unique()}@example.com`)
    await page.locator('#contact-form [name="message"]').fill('Hello, I would like to know more about the product.')
    const [created] = await Promise.all([
      page.waitForResponse((r) => r.url() === devUrl + '/contact' && r.request().method() === 'POST'),
      page.click('#contact-form button[type="submit"]'),
    ])
    expect(created.status()).toBe(201)
    await expect.poll(() => formStatus('contact-form').textContent()).toBe('Thank you! Your message was sent.')
    expect(await fieldError('contact-form', 'message').textContent()).toBe('')
    expect(b.errors).toEqual([])
  })

  it('waitlist: consent is required; an address joins once', async () => {
    b = await launch()
    const { page } = b
    await page.goto(previewUrl + '/')
    const email = `grace+${unique()}@example.com`
    await page.locator('#waitlist-form [name="email"]').fill(email)
    await page.click('#waitlist-form button[type="submit"]')
    await expect.poll(() => fieldError('waitlist-form', 'consent').getAttribute('data-code')).toBe('must_be_true')
    expect(await page.locator('#waitlist-form [name="consent"]').getAttribute('aria-invalid')).toBe('true')

    await page.locator('#waitlist-form [name="consent"]').check()
    await page.locator('#waitlist-form [name="size"]').selectOption('51–250')
    await page.click('#waitlist-form button[type="submit"]')
    await expect.poll(() => formStatus('waitlist-form').textContent()).toBe('You are on the waitlist. Thank you!')
    await page.locator('#waitlist-form [name="email"]').fill(email.toUpperCase())
    await page.locator('#waitlist-form [name="consent"]').check()
    await page.click('#waitlist-form button[type="submit"]')
    await expect.poll(() => formStatus('waitlist-form').textContent()).toBe('This address is already on the waitlist.')
    expect(b.errors).toEqual([])
  })
})

describe('accessibility and layout', () => {
  it.each([
    ['desktop, light', 1280, false],
    ['phone (320 px), dark', 320, true],
  ])('%s: no axe-core WCAG 2.2 AA violation, borders and focus rings at 3:1, signed out and signed in; nothing wider than the screen', async (name, width, dark) => {
    b = await launch({ width, dark })
    const { page } = b
    await page.goto(previewUrl + '/')
    await expect.poll(() => status().getAttribute('data-state')).toBe('signed-out')
    expect(await axeViolations(page)).toEqual([])
    expect(await nonTextContrastProblems(page)).toEqual([])
    await signIn(previewUrl)
    expect(await axeViolations(page)).toEqual([])
    expect(await nonTextContrastProblems(page)).toEqual([])
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width)
    await screenshot(page, `react-vite-${name.replace(/\W+/g, '-')}.png`)
  })
})
