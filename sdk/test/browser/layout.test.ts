// The demo page's layout in real Chromium: it fits a 320 px phone screen (no sideways scrolling, signed
// out and signed in), and it follows the system's light or dark mode, as the hosted sign-in page does,
// with every text at WCAG AA contrast (4.5:1) on its background in both.
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest'
import { type Browser, expectState, launch, screenshot, signIn } from './browser'

const devUrl = inject('devUrl')
let b: Browser

beforeEach(async () => {
  b = await launch()
})
afterEach(async () => {
  await b.close()
})

/** What sticks out to the right of the viewport: the document's width, and each element past the edge. */
const overflow = () =>
  b.page.evaluate(() => {
    const width = document.documentElement.clientWidth
    const past = [...document.querySelectorAll('body *')]
      .filter((e) => e.getClientRects().length > 0 && e.getBoundingClientRect().right > width + 0.5)
      .map((e) => `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}${e.className ? '.' + e.className : ''}`)
    return { width, scrollWidth: document.documentElement.scrollWidth, past }
  })

/** Every visible text whose contrast with the background behind it is below 4.5:1 (WCAG 1.4.3, AA). */
const lowContrast = () =>
  b.page.evaluate(() => {
    const rgba = (c: string) => (c.match(/[\d.]+/g) ?? []).map(Number) as number[]
    const lum = ([r, g, b]: number[]) => {
      const ch = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
      return 0.2126 * ch(r) + 0.7152 * ch(g) + 0.0722 * ch(b)
    }
    const background = (e: Element | null): number[] => {
      for (; e; e = e.parentElement) {
        const c = rgba(getComputedStyle(e).backgroundColor)
        if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c
      }
      return rgba(getComputedStyle(document.documentElement).backgroundColor)
    }
    const bad: string[] = []
    for (const e of document.querySelectorAll('body *')) {
      const own = [...e.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent!.trim() !== '')
      // disabled controls and the honeypot (hidden from people) are exempt, as in WCAG
      if (!own || e.getClientRects().length === 0 || e.closest('[aria-hidden="true"], :disabled')) continue
      const fg = lum(rgba(getComputedStyle(e).color))
      const bg = lum(background(e))
      const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05)
      if (ratio < 4.5) bad.push(`${e.tagName.toLowerCase()} "${e.textContent!.trim().slice(0, 30)}": ${ratio.toFixed(2)}`)
    }
    return bad
  })

const pageBackground = () =>
  b.page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)

describe('demo page layout', () => {
  for (const width of [320, 390]) {
    it(`fits a ${width} px screen without sideways scrolling, signed out and signed in`, async () => {
      await b.page.setViewportSize({ width, height: 740 })
      await b.page.goto(devUrl + '/demo/')
      await expectState(b.page, 'signed-out')
      let o = await overflow()
      expect(o.past, `elements past the right edge at ${width} px`).toEqual([])
      expect(o.scrollWidth).toBeLessThanOrEqual(o.width)

      await signIn(b.page, devUrl)
      await b.page.click('#call-userinfo')
      await expect.poll(() => b.page.locator('#userinfo').isVisible()).toBe(true)
      o = await overflow()
      expect(o.past, `elements past the right edge at ${width} px, signed in`).toEqual([])
      expect(o.scrollWidth).toBeLessThanOrEqual(o.width)
      await screenshot(b.page, `demo-page-${width}px.png`)
      expect(b.errors).toEqual([])
    })
  }

  it('follows the system: dark in dark mode, light in light mode, readable in both', async () => {
    await b.page.setViewportSize({ width: 390, height: 740 })
    await b.page.emulateMedia({ colorScheme: 'light' })
    await b.page.goto(devUrl + '/demo/')
    await expectState(b.page, 'signed-out')
    expect(await pageBackground()).toBe('rgb(246, 247, 251)')
    expect(await lowContrast()).toEqual([])

    await b.page.emulateMedia({ colorScheme: 'dark' })
    expect(await pageBackground()).toBe('rgb(21, 23, 26)') // the hosted page's dark background
    expect(await lowContrast()).toEqual([])
    // the field errors and the form status, in dark mode too
    await b.page.click('#waitlist-form button[type="submit"]')
    await expect.poll(() => b.page.locator('#waitlist-form [data-error-for="email"]').textContent()).not.toBe('')
    expect(await lowContrast()).toEqual([])
    await screenshot(b.page, 'demo-page-dark.png')
    expect(b.errors.filter((e) => !/status of 400 .*\/waitlist/.test(e))).toEqual([]) // the 400 is the test's own
  })
})
