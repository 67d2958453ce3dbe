package console

// catalogs are the console's translations by page language (page.Languages): English text (or a
// pattern with %s, filled in order by the script's t()) to its translation. English needs none. A text
// of index.html or of a t('…') call in console.js that has none fails TestGerman_EveryTextOfTheConsole.
var catalogs = map[string]map[string]string{"de": de}

// translate is the page template's {{t .Lang "…"}}.
func translate(lang, s string) string {
	if tr, ok := catalogs[lang][s]; ok {
		return tr
	}
	return s
}
