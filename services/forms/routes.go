package forms

import "github.com/gofiber/fiber/v2"

// Routes mounts the whole surface of the forms service. The paths are where the ingress sends them.
func (s *Service) Routes(r fiber.Router) {
	r.Post("/contact", s.submitContact)
	r.Options("/contact", s.preflight)
	r.Post("/waitlist", s.submitWaitlist)
	r.Options("/waitlist", s.preflight)
}

// StreamedPaths tells the platform that these bodies are read here, through the 16 KB limit and after
// the origin check, not buffered by the platform first.
func (s *Service) StreamedPaths() []string { return []string{"/contact", "/waitlist"} }
