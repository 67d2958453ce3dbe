// Command gen writes the labelled spam corpus, testdata/corpus.jsonl: genuine enquiries (ham) and spam as
// forms receive them, from hand-written templates filled with varied names, organisations, products and
// numbers, with a fixed seed so that the file is reproducible:
//
//	go run ./services/forms/spam/testdata/gen > services/forms/spam/testdata/corpus.jsonl
//
// Both classes draw on the same fillers, greetings, sign-offs, address providers, IP ranges and token
// timings, so that nothing but the content separates them; hard cases on both sides (polite guest-post
// spam without links, genuine messages with several links or a shortener) keep the figures honest.
package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
)

type record struct {
	Label     string   `json:"label"`
	Kind      string   `json:"kind"`
	Languages []string `json:"languages"`
	Name      string   `json:"name"`
	Email     string   `json:"email"`
	Message   string   `json:"message"`
	IP        string   `json:"ip"`
	ElapsedMS int64    `json:"elapsed_ms,omitempty"`
}

var rng = rand.New(rand.NewPCG(35, 61))

func pick[T any](xs []T) T { return xs[rng.IntN(len(xs))] }

var (
	first = []string{"Anna", "Ben", "Chloé", "David", "Elif", "Finn", "Greta", "Hannah", "Ibrahim", "Jonas", "Katarzyna",
		"Lukas", "Maria", "Noah", "Olga", "Paul", "Quentin", "Rosa", "Sven", "Tobias", "Ursula", "Valentina", "Wei", "Xenia",
		"Yusuf", "Zoe", "Emma", "Liam", "Sofia", "Mateo", "Aisha", "Kenji", "Priya", "Lars", "Ingrid", "Jakob", "Mia", "Omar"}
	last = []string{"Müller", "Schmidt", "Smith", "Johnson", "Nowak", "García", "Rossi", "Dubois", "Yilmaz", "Novak",
		"Jansen", "Andersson", "O'Brien", "Kowalski", "Becker", "Hoffmann", "Tanaka", "Chen", "Patel", "Fischer", "Weber",
		"Martin", "Brown", "Wilson", "Schulz", "Lehmann", "Krause", "Bauer"}
	providers = []string{"gmail.com", "outlook.com", "gmx.de", "web.de", "yahoo.com", "posteo.de", "icloud.com",
		"proton.me", "t-online.de", "hotmail.com"}
	orgs = []string{"Ruderclub Elbe", "TSV Nordstadt", "Kita Sonnenschein e.V.", "Green Valley Tennis Club", "Harbour Choir",
		"Lindenhof Sports", "Bergwacht Allgäu", "Riverside Rowing", "Makerspace Süd", "Chess Club Kreuzberg",
		"Stadtbibliothek Freunde e.V.", "Northside Football Association", "Alpine Hiking Society", "Jugendfeuerwehr Ost",
		"Bright Path Foundation", "Brightwater Analytics GmbH", "Kranich Software", "Meadow Health Clinic"}
	products = []string{"the forms", "your contact form", "the waitlist", "the sign-in", "the membership form", "the API",
		"the export", "the double opt-in", "the webhooks"}
	hamSign  = []string{"Best regards", "Thanks", "Kind regards", "Cheers", "Many thanks", "Thank you", "Best", ""}
	deSign   = []string{"Viele Grüße", "Beste Grüße", "Mit freundlichen Grüßen", "LG", "Danke und Gruß", ""}
	greet    = []string{"Hi", "Hello", "Hi there", "Good morning", "Dear team", "Hey", "Hello team", ""}
	deGreet  = []string{"Hallo", "Guten Tag", "Liebes Team", "Moin", "Hallo zusammen", "Sehr geehrte Damen und Herren,", ""}
	sizes    = []string{"40", "75", "120", "250", "600", "1,200", "35", "90", "300"}
	spamSign = []string{"Best regards", "Thanks", "Regards", "Kind regards", "Best", "Cheers", "Thank you", ""}
	// genuine links: a member's own site, a screenshot, an issue, a document
	hamLinks = []string{"https://www.ruderclub-elbe.de/mitglied-werden", "https://imgur.com/a/x7Fq2Lp",
		"https://github.com/brightwater/site/issues/42", "https://docs.google.com/document/d/1aB3xYz/edit",
		"https://www.tsv-nordstadt.de", "https://harbourchoir.org/join", "https://drive.google.com/file/d/0Bx9/view",
		"https://makerspace-sued.de/kalender", "https://www.linkedin.com/in/anna-becker", "https://calendly.com/priya-patel/30min"}
	spamDomains = []string{"seo-rankpro.net", "top-backlinks.biz", "cryptoyield-now.io", "bestmeds-online.shop",
		"cheap-pills24.ru", "luckyspin-casino.win", "growth-hackers.agency", "trafficboost.xyz", "webfix-studio.co",
		"quickloans-direct.info", "forex-signals.pro", "binance-bonus.click"}
)

func fullName() string { return pick(first) + " " + pick(last) }

func addressOf(name string) string {
	parts := strings.Fields(strings.ToLower(name))
	local := parts[0]
	switch rng.IntN(4) {
	case 0:
		local = parts[0] + "." + parts[len(parts)-1]
	case 1:
		local = parts[0][:1] + parts[len(parts)-1]
	case 2:
		local = parts[0] + fmt.Sprint(rng.IntN(99))
	}
	r := strings.NewReplacer("ü", "ue", "ö", "oe", "ä", "ae", "é", "e", "í", "i", "'", "", "ß", "ss")
	return r.Replace(local) + "@" + pick(providers)
}

func ip() string {
	switch rng.IntN(4) {
	case 0:
		return fmt.Sprintf("84.%d.%d.%d", rng.IntN(255), rng.IntN(255), 1+rng.IntN(250))
	case 1:
		return fmt.Sprintf("91.%d.%d.%d", rng.IntN(255), rng.IntN(255), 1+rng.IntN(250))
	case 2:
		return fmt.Sprintf("2a02:8108:%x:%x::%x", rng.IntN(0xffff), rng.IntN(0xffff), 1+rng.IntN(0xfff))
	}
	return fmt.Sprintf("185.%d.%d.%d", rng.IntN(255), rng.IntN(255), 1+rng.IntN(250))
}

// elapsed is a token's age at the post: people take seconds to minutes; a page without the token sends none.
func humanElapsed() int64 {
	if rng.IntN(10) < 4 {
		return 0
	}
	return int64(6000 + rng.IntN(400000))
}

func botElapsed() int64 {
	switch rng.IntN(10) {
	case 0, 1, 2, 3, 4:
		return 0 // most bots post without loading the page
	case 5, 6, 7:
		return int64(200 + rng.IntN(2200))
	}
	return int64(6000 + rng.IntN(200000)) // a person pasting spam
}

func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, pick([]string{"\n\n", "\n", " "}))
}

func sign(s []string, name string) string {
	g := pick(s)
	if g == "" {
		return ""
	}
	if rng.IntN(2) == 0 {
		return g + ",\n" + strings.Fields(name)[0]
	}
	return g + ",\n" + name
}

func fill(t, name string) string {
	return strings.NewReplacer("{org}", pick(orgs), "{size}", pick(sizes), "{product}", pick(products),
		"{n}", fmt.Sprint(2+rng.IntN(20)), "{first}", strings.Fields(name)[0], "{link}", pick(hamLinks),
		"{day}", pick([]string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}),
		"{tag}", pick([]string{"Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag"}),
		"{sdomain}", pick(spamDomains), "{sdomain2}", pick(spamDomains), "{sdomain3}", pick(spamDomains),
		"{pct}", fmt.Sprint(20+rng.IntN(400)), "{money}", fmt.Sprint(100*(1+rng.IntN(90)))).Replace(t)
}

var hamEN = []string{
	"We are {org}, about {size} members, and we are looking for a way to take sign-ups on our website. What would {product} cost us per year?",
	"Could you tell me whether {product} can send a copy of each submission to two addresses? Our secretary and treasurer both need it.",
	"I tried to export our entries as CSV but the umlauts in the names come out garbled when I open the file in Excel. Is there a setting for that?",
	"We'd love a demo of {product} for our board. Any time on {day} afternoon would work for us.",
	"Is it possible to host everything in the EU? Our data protection officer asked before we sign anything.",
	"Since yesterday our members get no confirmation mail after signing up. Nothing changed on our side as far as I know. Could you take a look?",
	"I'm writing an article about small clubs going digital for the local paper and would like to ask you a few questions about {product}.",
	"Our webhook receiver returns 200 but the dashboard shows the delivery as failed. Screenshot here: {link}",
	"We run {n} teams and each coach wants their own form. Can we declare several forms on one account?",
	"Quick question: does the waitlist keep the order people signed up in? We want to invite them in that order.",
	"Hello, I am the new chair of {org}. The previous chair set up your service and I need access to the settings. How do I go about that?",
	"We would like to partner with you: we build websites for sports clubs and many of our clients ask for a contact form that just works.",
	"The sign-in page shows in English although our browser is set to German. Is there a way to force German?",
	"Can the contact form have a topic field with our own choices, like 'youth training' and 'sponsoring'?",
	"Our IT volunteer asks whether you support Redis Cluster for self-hosting. We have {n} nodes available.",
	"Thanks for the quick help last week, the forms work perfectly now. One more thing: can we change the text of the thank-you page?",
	"We got a few messages twice after our site had a hiccup. Does the Idempotency-Key header fix that?",
	"I would like to cancel our subscription at the end of the month; we are merging with another club. What happens to our data?",
	"Is there a discount for non-profits? We are a registered charity with {size} volunteers.",
	"Please delete all data you hold about me, I left {org} in spring.",
	"Our form is on {link} and submissions stopped arriving on {day}. The page shows the thank-you message though.",
	"We are comparing three form services for {org}. Could you send us your security documentation and a sample data processing agreement?",
	"Would it be possible to book a 30 minute call to walk through the setup? My calendar: {link}",
	"Hi, we use SEO friendly static pages for our club site and want the form to work without JavaScript. Is that supported?",
	"I think there is a typo on your pricing page: it says 'per anum'. Just so you know!",
	"We had a member complain that the form said her e-mail was invalid, it is an address with a plus sign. Can you check?",
	"Can we get the submissions as a webhook into our Nextcloud? An example of the payload would help.",
	"Our treasurer asks for an invoice with our VAT number on it. Where can I enter that?",
	"Love the product!!! Our sign-ups doubled since we moved the form to your service. Thanks a lot.",
	"URGENT: our form shows an error page since this morning and our registration deadline is tonight. Please call me back.",
	"I found the docs at {link} but I am not sure which durability level we need for a small club. Any advice?",
	"We are a small team at {org} and would like to try the service for our event registrations in {n} weeks.",
	"Could you add a field type for IBAN? We collect membership fees by direct debit.",
	"How do I add a second allowed origin? We have the club site and a separate page for the summer camp.",
}

var hamDE = []string{
	"wir sind der {org} mit etwa {size} Mitgliedern und suchen ein Anmeldeformular für unsere Webseite. Was würde das im Jahr kosten?",
	"seit gestern kommen bei uns keine Bestätigungsmails mehr an. Könnt ihr bitte einmal nachsehen?",
	"ist es möglich, die Daten ausschließlich in Deutschland zu speichern? Unser Datenschutzbeauftragter fragt danach.",
	"wir hätten gerne eine Demo für unseren Vorstand, am liebsten am {tag} nachmittag.",
	"beim CSV-Export werden die Umlaute falsch dargestellt, wenn ich die Datei in Excel öffne. Gibt es dafür eine Einstellung?",
	"kann man pro Mannschaft ein eigenes Formular anlegen? Wir haben {n} Mannschaften.",
	"ich bin der neue Kassenwart vom {org} und brauche Zugang zu den Einstellungen. Wie gehe ich vor?",
	"bitte löschen Sie alle Daten, die Sie über mich gespeichert haben. Ich bin aus dem Verein ausgetreten.",
	"gibt es einen Rabatt für gemeinnützige Vereine? Wir sind ein eingetragener Verein.",
	"unser Formular steht unter {link}, aber seit {tag} kommen keine Nachrichten mehr an.",
	"können wir die Anmeldungen per Webhook in unsere Vereinsverwaltung übernehmen? Ein Beispiel wäre hilfreich.",
	"wir bräuchten eine Rechnung mit unserer Steuernummer. Wo kann ich die eintragen?",
	"vielen Dank für die schnelle Hilfe letzte Woche! Eine Frage noch: kann man den Text der Danke-Seite ändern?",
	"unsere Anmeldefrist endet heute Abend und das Formular zeigt eine Fehlerseite. Bitte dringend melden!",
	"wir vergleichen gerade drei Anbieter. Könnten Sie uns Ihre Unterlagen zur Datensicherheit und einen AV-Vertrag schicken?",
	"ein Mitglied bekommt beim Absenden immer 'E-Mail ungültig', die Adresse enthält einen Bindestrich. Könnt ihr das prüfen?",
	"wir möchten das Formular ohne JavaScript einbinden, geht das? Unsere Seite ist statisch gebaut.",
	"wir würden gerne kostenlos testen, bevor wir uns entscheiden. Gibt es eine Testphase?",
}

var hamOther = []struct {
	langs []string
	texts []string
}{
	{[]string{"en", "de", "fr", "es"}, []string{
		"Bonjour, nous sommes une association de {size} membres et nous cherchons un formulaire d'inscription. Quel est le tarif annuel ?",
		"Bonjour, depuis hier nos membres ne reçoivent plus l'e-mail de confirmation. Pouvez-vous vérifier ?",
		"Hola, somos un club de {size} socios y queremos un formulario de contacto para nuestra web. ¿Cuánto cuesta al año?",
		"Hola, ¿es posible alojar los datos solo en la UE? Nuestro responsable de protección de datos lo pregunta.",
	}},
	{[]string{"ru", "en"}, []string{
		"Здравствуйте! Мы спортивный клуб, около {size} участников. Сколько стоит форма регистрации в год?",
		"Добрый день, со вчерашнего дня не приходят письма с подтверждением. Можете проверить?",
	}},
	{[]string{"ja", "en"}, []string{
		"こんにちは。私たちは{size}人ほどのクラブです。登録フォームの年間費用を教えてください。",
	}},
}

var spamTemplates = []struct {
	kind  string
	texts []string
}{
	{"seo", []string{
		"I noticed your website is not ranking on the first page of Google for your main keywords. Our SEO team can get you there in {n} weeks, guaranteed. Reply with your phone number for a free audit.",
		"Your website could get {pct}% more organic traffic with quality backlinks from high domain authority sites. Packages from ${money}. Details: https://{sdomain}/packages",
		"Dear website owner, we offer white label SEO and link building. Rank higher than your competitors. Reply STOP to opt out.",
		"Hi, I was checking your website and found {n} errors that stop Google from ranking it. Shall I send you the report? It's free.",
		"Want more customers? We publish guest posts on {n} DA50+ blogs. Cheap prices, fast delivery. https://{sdomain}",
		"I came across your website and I think the design is outdated. We redesign your website for a fixed price of ${money}, with SEO included.",
	}},
	{"outsourcing", []string{
		"Hello, we are an offshore app development company with {n} years of experience. We can build your mobile app at 60% less cost. Can we schedule a call?",
		"Need a virtual assistant? Our agency provides full-time assistants from $6 per hour. Reply with your requirements.",
		"We create explainer videos that convert visitors into buyers. See samples at https://{sdomain}/samples - special offer this week only.",
		"Hi {first}, I hope you are well. We help businesses like yours with lead generation and cold email outreach. {n} booked meetings per month or you don't pay.",
	}},
	{"crypto", []string{
		"Earn $ {money} per day with our automated bitcoin trading bot! Passive income guaranteed. Join now: https://{sdomain}/join",
		"Exclusive investment opportunity: our crypto fund returned {pct}% last quarter. Minimum deposit 250 USDT. WhatsApp +44 7700 900{n}",
		"Congratulations! You have been selected for the ETH airdrop. Claim your tokens before they expire: https://{sdomain}/claim?id={n}",
		"Your wallet has a pending withdraw of 0.{n} BTC. Confirm here to receive it: https://{sdomain}",
		"Make money from home with forex trading signals. {pct}% profit every month, risk-free. Telegram: @signals_{n}",
	}},
	{"pharma", []string{
		"Buy viagra and cialis online without prescription. Cheap prices, discreet delivery. https://{sdomain}",
		"Online pharmacy: {pct}% off all pills this week! Order now at https://{sdomain}/shop",
		"Lose {n} kg in {n} days with the new keto formula. 100% natural, 100% free trial: https://{sdomain}",
	}},
	{"casino", []string{
		"Get 200 free spins at the best online casino! Jackpot of ${money} waiting for you. https://{sdomain}/bonus",
		"Sports betting tips with {pct}% accuracy. Join our VIP channel today: https://{sdomain}",
	}},
	{"loans", []string{
		"Need a business loan? Up to ${money},000 in 24 hours, no credit check. Apply: https://{sdomain}/apply",
		"Fast cash loans for any purpose, bad credit score OK. Low interest, instant approval.",
	}},
	{"linkfarm", []string{
		"https://{sdomain} https://{sdomain2} https://{sdomain3} https://{sdomain}/a https://{sdomain2}/b",
		"Check these: http://{sdomain}/p/{n} http://{sdomain2}/p/{n} http://{sdomain3}/p/{n} http://{sdomain}/q/{n}",
		"<a href=\"https://{sdomain}\">best prices</a> <a href=\"https://{sdomain2}\">click here</a> [url=https://{sdomain3}]more[/url]",
		"good site thanks [url=https://{sdomain}]cheap[/url] [url=https://{sdomain2}]online[/url]",
		"Nice article, see also https://bit.ly/3x{n}Kq and https://tinyurl.com/y{n}abc and https://cutt.ly/w{n}",
	}},
	{"adult", []string{
		"Hot singles in your area want to meet you tonight! Free registration: https://{sdomain}",
		"Sexy girls waiting for you. Dating without limits, click here: https://{sdomain}",
	}},
	{"shouting", []string{
		"LIMITED TIME OFFER!!! GET YOUR WEBSITE ON TOP OF GOOGLE TODAY!!! CALL NOW!!!",
		"ATTENTION BUSINESS OWNER: YOUR LISTING WILL BE REMOVED. CONFIRM YOUR DETAILS NOW!!!",
		"FREE MONEY $$$ NO RISK $$$ WORK FROM HOME $$$",
	}},
	{"social", []string{
		"Buy real Instagram followers and likes, {n}k followers for only ${money}. Fast and safe. https://{sdomain}",
		"Grow your YouTube channel with real subscribers. {pct}% discount today. Reply to get started.",
	}},
	{"soft", []string{ // polite spam with no signal words: the corpus's honest misses
		"Hello, I'm a freelance writer and would love to contribute an article to your blog. I have several topic ideas in mind. Would you be interested?",
		"Hi, is this the right address to talk about a partnership? We think our audience would be a good fit for your product.",
		"Hi there, I'd like to speak to whoever handles your marketing. Could you forward this or share their address?",
		"Good day, are you open to a short collaboration that could benefit both our companies? Let me know and I will send details.",
	}},
	{"german", []string{
		"Sehr geehrte Damen und Herren, Geld verdienen von zu Hause aus! Bis zu {money} Euro pro Woche, ohne Risiko. Jetzt kaufen: https://{sdomain}",
		"Ihre Webseite ist bei Google nicht auf Seite 1. Wir bringen Sie mit SEO nach oben, garantiert. Sonderangebot nur diese Woche!",
		"Gewinnspiel: Sie haben gewonnen! Gewinn jetzt abholen unter https://{sdomain}/gewinn",
	}},
}

var foreignSpam = []string{
	"Здравствуйте! Предлагаем продвижение сайта в поисковых системах. Быстро и недорого. Пишите в телеграм.",
	"Заработок в интернете от {money} рублей в день. Без вложений! Подробности на сайте {sdomain}",
	"Лучшие ставки на спорт и казино онлайн. Бонус новым игрокам {pct}%!",
	"Купить дипломы и сертификаты недорого, доставка по всей стране. Звоните.",
	"您好，我们提供专业的网站优化服务，让您的网站排名第一。请联系我们。",
	"代开发票，正规税票，欢迎咨询。微信：{n}{n}{n}",
	"最新网络赚钱项目，每天收入{money}元，无需经验。",
	"高品质外贸客户开发，精准邮件营销，欢迎合作。",
}

func main() {
	var out []record
	add := func(label, kind string, langs []string, name, msg string, elapsed int64) {
		out = append(out, record{Label: label, Kind: kind, Languages: langs, Name: name, Email: addressOf(name),
			Message: msg, IP: ip(), ElapsedMS: elapsed})
	}
	en := []string{"en", "de"}
	for range 150 {
		name := fullName()
		add("ham", "enquiry_en", en, name, join(pick(greet), fill(pick(hamEN), name), sign(hamSign, name)), humanElapsed())
	}
	for range 80 {
		name := fullName()
		add("ham", "enquiry_de", en, name, join(pick(deGreet), fill(pick(hamDE), name), sign(deSign, name)), humanElapsed())
	}
	for _, o := range hamOther {
		for range 12 * len(o.texts) / 2 {
			name := fullName()
			add("ham", "enquiry_"+o.langs[0], o.langs, name, join(pick(greet), fill(pick(o.texts), name)), humanElapsed())
		}
	}
	// a few genuine messages that look like spam: several links, a shortener, an excited sender
	hardHam := []string{
		"Our three sites are https://www.tsv-nordstadt.de, https://jugend.tsv-nordstadt.de and https://shop.tsv-nordstadt.de and all need the same contact form. Possible?",
		"The form on https://bit.ly/ruderclub-anmeldung stopped working, it is our registration page.",
		"We are an SEO agency ourselves and would like to offer your forms to our clients. Is there a reseller program?",
		"THANK YOU SO MUCH!!! The export saved our general assembly.",
		"Do you have a discount for clubs? We saw the limited time offer on your website but it expired.",
	}
	for _, t := range hardHam {
		name := fullName()
		add("ham", "hard_ham", en, name, join(pick(greet), t, sign(hamSign, name)), humanElapsed())
	}

	for _, g := range spamTemplates {
		n := 22
		if g.kind == "soft" {
			n = 8
		}
		for range n {
			name := fullName()
			add("spam", g.kind, en, name, join(pick(greet), fill(pick(g.texts), name), sign(spamSign, name)), botElapsed())
		}
	}
	for range 40 {
		name := fullName()
		add("spam", "foreign_script", en, name, fill(pick(foreignSpam), name), botElapsed())
	}
	// blasts: one text sent again and again with other names and addresses, some of it bland enough that
	// only the repetition gives it away
	blasts := []string{
		"Hello, we are a team of professional developers. We can help you build any website or application. Please let us know if you are interested.",
		"Hi, I would like to discuss a business proposal with you. Kindly get back to me at your earliest convenience.",
		"Greetings, would you be interested in increasing the number of visitors to your website? Let me know and I will share details.",
	}
	for _, b := range blasts {
		for range 9 {
			name := fullName()
			add("spam", "blast", en, name, b, botElapsed())
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	for _, r := range out {
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
